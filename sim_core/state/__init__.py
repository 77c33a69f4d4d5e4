"""The simulated state's field layout and its canonical saved bytes."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "StateCodec": "codec",
    "StateLimits": "codec",
    "digest_of": "codec",
    "RoundEndReason": "layout",
    "car_length": "layout",
    "field_names": "layout",
    "part_field": "layout",
})
