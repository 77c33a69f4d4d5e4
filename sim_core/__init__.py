"""Deterministic race simulation and asset pipeline (pure: no trio, no clocks, no protocol imports)."""

ENGINE_ID = "sim_core/1"
