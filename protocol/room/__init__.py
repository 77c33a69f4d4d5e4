"""Rooms (spec/rooms.md): the host's and a member's sans-IO state machines, their messages, Ready, the start grid and the locked start."""
