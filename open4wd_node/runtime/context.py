"""What every command gets: the node's data directory and its effective configuration."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from open4wd_node.runtime.config import NodeConfig, load_config, with_settings
from open4wd_node.runtime.errors import UserError

__all__ = ["NodeContext", "UserError"]


@dataclass(frozen=True)
class NodeContext:
    """The data directory and the effective configuration every command runs with."""

    data_dir: Path
    config: NodeConfig
    config_path: Path | None = None  # the file ``config`` came from (``signal`` reads its ``[signal]`` table there)

    @classmethod
    def open(cls, data_dir: Path, config_path: Path | None) -> "NodeContext":
        """Use ``<data-dir>/node.toml`` when no ``--config`` is given and that file exists."""
        if config_path is None and (data_dir / "node.toml").is_file():
            config_path = data_dir / "node.toml"
        return cls(data_dir=data_dir, config=load_config(config_path), config_path=config_path)

    def with_overrides(self, **given: Any) -> "NodeContext":
        """Settings given on the command line (``None`` = not given) win over the file; a list adds to
        the file's, a table replaces the entries it names (``open4wd_node.runtime.config``)."""
        return replace(self, config=with_settings(self.config, given))

    @property
    def identity_path(self) -> Path:
        """The identity key file: the ``identity_file`` setting, else ``<data-dir>/identity.key``."""
        return Path(self.config.identity_file) if self.config.identity_file else self.data_dir / "identity.key"
