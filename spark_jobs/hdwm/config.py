"""Linkage profiles: the DWM parameter set as a validated pydantic model.

Parameter names and defaults follow the Data Washing Machine parameter file
template (``DWM10_Parms``; Talburt et al. 2020, see
``../shared/data/dwm/PARAMETERS.md``). washline adds a few Spark-only knobs
(``maxBlockSize``, ``ccCheckpointInterval``, ``ccMaxRounds``,
``initialRuleMode``), named in the same camelCase style.

Profiles live as YAML in ``include/config/<name>.yaml``. ``load_profile``
accepts either a name or a path; names resolve through ``$WASHLINE_CONFIG_DIR``
first, then ``<repo>/include/config`` found relative to this file (never the
current working directory).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

__all__ = ["LinkageProfile", "ProfileError", "load_profile", "config_dirs"]


class ProfileError(ValueError):
    """A profile could not be found, parsed or validated."""


class LinkageProfile(BaseModel):
    """DWM parameters (names as in DWM10_Parms; defaults = DWM template).

    Frequencies (``beta``, ``sigma``, ``minFreqStdToken``, ``maxFreqErrToken``)
    are counts of token occurrences over the whole input; lengths are in
    characters; ``mu``/``epsilon`` are scores in [0, 1].
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    name: str = "default"
    description: str = ""

    # --- tokenising (DWM14) ---
    tokenizerType: Literal["Splitter", "Compress", "CompressNbr"] = "Splitter"
    removeDuplicateTokens: bool = False
    #: washline: all-digit tokens lose leading zeros ("010525974" and
    #: "10525974" are one SSN; a zip "0800" becomes "800" on both sides).
    stripLeadingZeros: bool = False

    # --- global correction (DWM25) ---
    runGlobalCorrection: bool = False
    minFreqStdToken: int = Field(5, ge=1)
    minLenStdToken: int = Field(3, ge=1)
    maxFreqErrToken: int = Field(3, ge=1)

    # --- blocking (DWM42) ---
    beta: int = 2
    blockByPairs: bool = False
    minBlkTokenLen: int = Field(4, ge=1)
    excludeNumericBlocks: bool = False
    #: washline: with excludeNumericBlocks, an all-digit token of at least this
    #: many digits may still block (SSN, phone, date of birth are the best
    #: keys a person record has; short numbers like house numbers are not).
    #: 0 = no exception (DWM behaviour).
    minNumBlkTokenLen: int = Field(0, ge=0)
    #: washline: largest block (references) compared as one group; bigger
    #: blocks are split into deterministic sub-blocks of at most this size.
    maxBlockSize: int = Field(100, ge=2)

    # --- stop tokens / comparison (DWM55, DWM65/66) ---
    sigma: int = 12
    removeExcludedBlkTokens: bool = False
    comparator: Literal[
        "ScoringMatrixKris", "ScoringMatrixStd", "WeightedTokenMatch", "Cosine", "MongeElkan"
    ] = "ScoringMatrixKris"
    #: washline WeightedTokenMatch: a token pair whose similarity is below this
    #: contributes nothing (weak fuzzy matches between unrelated words are noise).
    tokenMinSimilarity: float = Field(0.7, ge=0.0, le=1.0)
    #: washline: with matrixNumTokenRule, two all-digit tokens both at least this
    #: long are compared by Damerau–Levenshtein instead of exact equality (an
    #: SSN with a transposed digit is still the same SSN). 0 = always exact.
    numericFuzzyMinLen: int = Field(0, ge=0)
    #: washline: with a weighted comparator, the score of a pair is
    #: ``max(weighted score, floor comparator's score)``. ``ScoringMatrixKris``
    #: weighs the leading tokens of the shorter reference most (DWM66), which
    #: keeps a pair whose *first* fields agree (a person who moved house: same
    #: name, different address) that a rarity-weighted score normalised by the
    #: whole reference would drop. ``none`` = weighted score only.
    comparatorFloor: Literal["none", "ScoringMatrixKris", "ScoringMatrixStd"] = "none"
    #: washline: the floor comparator's score only counts when it reaches this
    #: value (its own link threshold; 0.60 is the DWM authors' mu for
    #: ScoringMatrixKris), so the floor never links below its own calibration.
    comparatorFloorMin: float = Field(0.0, ge=0.0, le=1.0)
    matrixNumTokenRule: bool = True
    matrixInitialRule: bool = True
    #: washline: with matrixInitialRule, "exact" = a one-letter token scores
    #: 1 only against the identical letter (DWM66); "initial" = it also scores
    #: 1 against a longer token starting with that letter ("J" ~ "JOHN").
    initialRuleMode: Literal["exact", "initial"] = "exact"
    mu: float = Field(0.5, ge=0.0, le=1.0)
    muIterate: float = Field(0.10, gt=0.0, le=1.0)

    # --- cluster quality (DWM90/95) ---
    epsilon: float = Field(0.50, ge=0.0, le=1.0)
    epsilonIterate: float = Field(0.0, ge=0.0, le=1.0)

    # --- connected components (washline, Kiveris et al. 2014) ---
    ccCheckpointInterval: int = Field(3, ge=1)
    ccMaxRounds: int = Field(50, ge=1)

    @model_validator(mode="after")
    def _check_relations(self) -> "LinkageProfile":
        if not (2 <= self.beta < self.sigma):
            raise ValueError(f"beta must be ≥ 2 and < sigma (beta={self.beta}, sigma={self.sigma})")
        if self.runGlobalCorrection and self.maxFreqErrToken >= self.minFreqStdToken:
            raise ValueError(
                "maxFreqErrToken must be < minFreqStdToken "
                f"(maxFreqErrToken={self.maxFreqErrToken}, minFreqStdToken={self.minFreqStdToken})"
            )
        return self


def config_dirs() -> list[Path]:
    """Directories searched for ``<name>.yaml``, in order."""
    dirs = []
    env = os.environ.get("WASHLINE_CONFIG_DIR")
    if env:
        dirs.append(Path(env))
    dirs.append(Path(__file__).resolve().parents[2] / "include" / "config")
    return dirs


def _resolve(name_or_path: str | os.PathLike) -> Path:
    text = str(name_or_path)
    p = Path(text)
    if p.suffix in (".yaml", ".yml") or os.sep in text or "/" in text:
        if p.is_file():
            return p.resolve()
        raise ProfileError(f"linkage profile file not found: {text}")
    for d in config_dirs():
        for ext in (".yaml", ".yml"):
            cand = d / f"{text}{ext}"
            if cand.is_file():
                return cand
    raise ProfileError(
        f"linkage profile {text!r} not found in " + ", ".join(str(d) for d in config_dirs())
    )


def load_profile(name_or_path: str | os.PathLike | LinkageProfile | None = "default") -> LinkageProfile:
    """Load and validate a linkage profile.

    Args:
        name_or_path: a profile name (``default`` → ``include/config/default.yaml``),
            a path to a YAML file, or an existing ``LinkageProfile`` (returned as is).

    Returns:
        LinkageProfile

    Raises:
        ProfileError: file not found, not a YAML mapping, or invalid values
            (the message lists each bad field, e.g. "beta must be ≥ 2 and < sigma").
    """
    if isinstance(name_or_path, LinkageProfile):
        return name_or_path
    path = _resolve(name_or_path or "default")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ProfileError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: a profile must be a YAML mapping of DWM parameters")
    data.setdefault("name", path.stem)
    try:
        return LinkageProfile(**data)
    except ValidationError as exc:
        msgs = "; ".join(
            f"{'.'.join(str(x) for x in e['loc']) or 'profile'}: {e['msg']}" for e in exc.errors()
        )
        raise ProfileError(f"{path}: invalid linkage profile: {msgs}") from exc
