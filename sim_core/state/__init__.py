"""The simulated state's field layout, its canonical saved bytes and the typed view of one car."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "CarView": "car_view",
    "StateCodec": "codec",
    "StateLimits": "codec",
    "digest_of": "codec",
    "RoundEndReason": "layout",
    "car_length": "layout",
    "field_names": "layout",
    "part_field": "layout",
})
