"""The quality settings: ``include/gx/quality.yaml`` as a validated pydantic model.

What it owns: where the suites and their settings live (``SUITES_DIR``,
``CONFIG_FILE``), which suites run (``SUITE_NAMES``, ``REGISTRY_SUITE_NAMES``),
the model of the settings file (``QualitySettings``: the bounds the suites read
as parameters, ``keep_runs``, ``sources_config``, the suite lists) and
``load_config``, which also takes the allowed source names from the
``sources.yaml`` the file names (read by ``sourcecontract``, the one parser of
that file). The file's own comments say what each setting means.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from washline.paths import REPO_ROOT

SUITES_DIR = REPO_ROOT / "include" / "gx"
CONFIG_FILE = "quality.yaml"
SUITE_NAMES = ("staging_records", "staging_links", "staging_clusters")
#: Suites of the entity registry, run on a registry night only: what the night
#: staged (its delta or the merged version), its continuity with the published
#: entities, and the reconciliation of the totals after publish with the manifest.
REGISTRY_SUITE_NAMES = ("staging_entity_members", "staging_entities", "staging_entity_changes",
                        "entity_continuity", "entity_reconciliation")
DEFAULT_KEEP_RUNS = 5


class QualityConfigError(ValueError):
    """``include/gx/quality.yaml`` (or the sources file it names) is missing or invalid."""


class _Band(BaseModel):
    """``min`` and ``max`` with ``FLOOR <= min <= max`` (and ``<= CEILING`` when set)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    FLOOR: ClassVar[float] = 0
    CEILING: ClassVar[float | None] = None

    @model_validator(mode="after")
    def _ordered(self) -> "_Band":
        low, high = self.min, self.max  # type: ignore[attr-defined]
        if not (self.FLOOR <= low <= high and (self.CEILING is None or high <= self.CEILING)):
            rule = f"{self.FLOOR:g} <= min <= max" + (f" <= {self.CEILING:g}" if self.CEILING is not None else "")
            raise ValueError(f"needs {rule}, got min={low}, max={high}")
        return self


class SizeBounds(_Band):
    """Bounds on a cluster's size (references): integers with ``1 <= min <= max``."""

    FLOOR: ClassVar[float] = 1
    min: int
    max: int


class ShareBand(_Band):
    """A band for a share (a fraction): ``0 <= min <= max <= 1``."""

    CEILING: ClassVar[float | None] = 1
    min: float
    max: float


class QualitySettings(BaseModel):
    """``quality.yaml``: ``cluster_size`` and ``singleton_share`` are required;
    ``joined_share`` defaults to [0, 1], ``keep_runs`` to 5, the suite lists to
    :data:`SUITE_NAMES` / :data:`REGISTRY_SUITE_NAMES` (also when empty), and
    ``sources_config`` (relative to the repo root) to ``include/config/sources.yaml``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = 1
    cluster_size: SizeBounds
    singleton_share: ShareBand
    joined_share: ShareBand = ShareBand(min=0.0, max=1.0)
    keep_runs: int = Field(DEFAULT_KEEP_RUNS, ge=1)
    sources_config: str = "include/config/sources.yaml"
    suites: tuple[str, ...] = SUITE_NAMES
    registry_suites: tuple[str, ...] = REGISTRY_SUITE_NAMES

    @field_validator("joined_share", "suites", "registry_suites", mode="before")
    @classmethod
    def _empty_is_default(cls, value: Any, info) -> Any:
        return value or cls.model_fields[info.field_name].default


def _problems(exc: ValidationError) -> str:
    """``key.sub: message; ...``, one entry per pydantic error."""
    lines = []
    for err in exc.errors():
        message = "unknown key" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        lines.append(f"{'.'.join(str(x) for x in err['loc']) or 'file'}: {message}")
    return "; ".join(lines)


def load_config(path: Path | None = None) -> dict[str, Any]:
    """Read and check the quality settings (default ``include/gx/quality.yaml``).

    Returns:
        ``{"cluster_size": {"min", "max"}, "singleton_share": {"min", "max"},
        "joined_share": {"min", "max"}, "source_names": [..] (sorted),
        "suites": [..], "registry_suites": [..], "keep_runs": int,
        "sources_config": str, "version": int}``.

    Raises:
        QualityConfigError: file missing, unreadable or invalid (cluster sizes
            are integers with 1 <= min <= max; shares lie in [0, 1] with
            min <= max; ``keep_runs`` an integer >= 1; no unknown key), or the
            ``sources.yaml`` it names is; the message names the file and every
            key at fault, e.g. ``quality.yaml: cluster_size.max: Field required``.
    """
    import yaml

    from sourcecontract import SourceConfigError, source_names

    path = path or SUITES_DIR / CONFIG_FILE
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise QualityConfigError(f"cannot read quality settings {path}: {exc}") from exc
    try:
        settings = QualitySettings.model_validate(doc)
    except ValidationError as exc:
        raise QualityConfigError(f"{path}: {_problems(exc)}") from None
    sources_path = REPO_ROOT / settings.sources_config
    try:
        names = source_names(sources_path)
    except SourceConfigError as exc:
        raise QualityConfigError(f"{path}: sources_config: {exc}") from exc
    out = settings.model_dump()
    out.update(suites=list(settings.suites), registry_suites=list(settings.registry_suites), source_names=names)
    return out
