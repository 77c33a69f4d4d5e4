"""Asset pipeline: read a stranger's GLB safely, validate it, bake its physics manifest, assemble cars.

Floats appear only while reading geometry (``reader``); everything a race consumes is the integer
``PhysicsManifest`` produced by ``bake`` and checked again by ``admission``.
"""
