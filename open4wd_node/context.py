"""What every command gets: the node's data directory and its effective configuration."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from open4wd_node.config import NodeConfig, load_config
from open4wd_node.context_errors import UserError

__all__ = ["NodeContext", "UserError"]


@dataclass(frozen=True)
class NodeContext:
    data_dir: Path
    config: NodeConfig

    @classmethod
    def open(cls, data_dir: Path, config_path: Path | None) -> "NodeContext":
        """Use ``<data-dir>/node.toml`` when no ``--config`` is given and that file exists."""
        if config_path is None and (data_dir / "node.toml").is_file():
            config_path = data_dir / "node.toml"
        return cls(data_dir=data_dir, config=load_config(config_path))

    def with_overrides(self, *, economy_config_version: int | None, deprecated_materials: list[str]) -> "NodeContext":
        """Command-line options win over the file; deprecated ids add to the configured list."""
        config = self.config
        if economy_config_version is not None:
            config = replace(config, economy_config_version=economy_config_version)
        if deprecated_materials:
            merged = tuple(dict.fromkeys((*config.deprecated_materials, *deprecated_materials)))
            config = replace(config, deprecated_materials=merged)
        return replace(self, config=config)

    @property
    def identity_path(self) -> Path:
        return Path(self.config.identity_file) if self.config.identity_file else self.data_dir / "identity.key"
