"""Spectating in the shell: ``MatchViewer`` watches a match through a source racer, verified and read-only."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "FrameObserver": "watcher",
    "MatchViewer": "watcher",
    "WatchReport": "watcher",
})
