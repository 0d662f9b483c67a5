"""Linkage profiles: the DWM parameter set as a validated pydantic model.

Parameter names and defaults follow the Data Washing Machine parameter file
template (``DWM10_Parms``; Talburt et al. 2020, see
``../shared/data/dwm/PARAMETERS.md``). washline adds a few Spark-only knobs
(``maxBlockSize``, ``ccCheckpointInterval``, ``ccMaxRounds``,
``initialRuleMode``, ``iterationShortcut``), named in the same camelCase style, and a few accuracy
rules that are off unless a profile turns them on (so a DWM parameter file
behaves as in DWM):

* ``frequencyScaling`` / ``frequencyReferenceSize`` – ``beta`` and ``sigma``
  keep DWM's names and meaning (token-occurrence counts) but are read as the
  values for an input of ``frequencyReferenceSize`` references and scaled
  with the input size ``N`` (``LinkageProfile.effective``). The run logs the
  effective values and writes them to ``metrics.json``
  (``effective_parameters``).
* ``givenNameConflictRule``, ``identifierConflictRule``,
  ``identifierMatchRule`` (+ ``identifierMinLen``, ``identifierMaxEdits``,
  ``identifierMatchMaxEdits``, ``givenNameMinSimilarity``) – name/identifier
  evidence, ``hdwm.evidence``.
* ``foldAbbreviations`` – street-suffix and state-name folding, ``hdwm.aliases``.

Profiles live as YAML in ``include/config/<name>.yaml``. ``load_profile``
accepts either a name or a path; names resolve through ``$WASHLINE_CONFIG_DIR``
first, then ``<repo>/include/config`` found relative to this file (never the
current working directory).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

__all__ = ["LinkageProfile", "ProfileError", "load_profile", "config_dirs", "frequency_scale"]

#: Exponent of ``N / frequencyReferenceSize`` per ``frequencyScaling`` mode.
SCALING_EXPONENTS = {"none": 0.0, "sqrt": 0.5, "linear": 1.0}


def frequency_scale(n_refs: int, mode: str = "none", reference_size: int = 1000) -> float:
    """Factor applied to the frequency thresholds ``beta`` and ``sigma`` for an
    input of ``n_refs`` references (washline; see ``LinkageProfile.effective``).

    ``max(1, n_refs / reference_size) ** e`` with ``e`` = 0 (``none``),
    0.5 (``sqrt``) or 1 (``linear``): thresholds never shrink below the
    profile's values, which hold as written up to ``reference_size``.

    Raises:
        ValueError: unknown mode, ``reference_size < 1`` or ``n_refs < 0``.
    """
    if mode not in SCALING_EXPONENTS:
        raise ValueError(f"frequencyScaling must be one of {sorted(SCALING_EXPONENTS)}, got {mode!r}")
    if reference_size < 1:
        raise ValueError(f"frequencyReferenceSize must be ≥ 1 (got {reference_size})")
    if n_refs < 0:
        raise ValueError(f"reference count must be ≥ 0 (got {n_refs})")
    return max(1.0, n_refs / reference_size) ** SCALING_EXPONENTS[mode]


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
    #: washline: fold street suffixes and state names to their USPS
    #: abbreviation before frequencies (``hdwm.aliases``; AVENUE/AVNUE → AVE).
    foldAbbreviations: bool = False
    #: washline: one spelling per number – an SSN written "123 45 6789" and a
    #: phone "(501) 555-1234" become one digit run, and a token that reads as
    #: a full date (YYYYMMDD, MMDDYYYY, DDMMYYYY, 7-digit M/D forms) becomes
    #: YYYYMMDD (``hdwm.tokenizer.canonical_date``).
    canonicalNumbers: bool = False

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
    #: washline: with blockByPairs, a blocking token of frequency ≤ floor(√beta)
    #: is also a block on its own (``hdwm.blocking.rare_token_limit``).
    rareTokenBlocks: bool = False
    #: washline: with blockByPairs, a pair of word tokens (letters, no digit)
    #: of one reference where at least one is above beta (a frequent given
    #: name or surname) but both are below sigma is also a block key when the
    #: pair itself is rare: held by at most ``frequentPairMaxBlock`` of the
    #: references being blocked (``hdwm.blocking.frequent_pair_keys``). A
    #: person who moved keeps "JOHN SMITH" when both names are too frequent
    #: to block alone. 0 = off.
    frequentPairMaxBlock: int = Field(0, ge=0)
    #: washline: with ``frequentPairMaxBlock``, a word token (as there, below
    #: sigma) paired with a one-letter token of the same reference (an
    #: initial) is a block key too, under the same cap. A person who moved and
    #: writes the given name differently (ANGIE / ANGELINA) keeps the surname
    #: and the middle initial; a rare surname alone is above ``√beta``, and an
    #: initial is shorter than ``minBlkTokenLen``, so no other key joins them.
    initialPairBlocks: bool = False
    #: washline: with ``frequentPairMaxBlock``, a long number (all digits, at
    #: least ``max(minNumBlkTokenLen, minBlkTokenLen)`` of them, below sigma:
    #: a date of birth, SSN, phone) paired with a word token above beta of the
    #: same reference ("19800315 SMITH") is a block key too, under the same
    #: cap. A person who moved keeps the name and the date of birth; a date
    #: held by more than √beta references does not block alone, names above
    #: beta pair with nothing, and a common name pair is above the cap.
    #: Off in default.yaml (measured without an F1 gain; benchmarks/README.md).
    numberPairBlocks: bool = False

    # --- stop tokens / comparison (DWM55, DWM65/66) ---
    sigma: int = 12
    #: washline: how ``beta`` and ``sigma`` grow with the input size ``N``
    #: (references). They are written as DWM counts that hold for an input of
    #: ``frequencyReferenceSize`` references (DWM's samples have 1,000) and
    #: are multiplied by ``max(1, N / frequencyReferenceSize) ** e`` with
    #: ``e`` = 0 (``none``, DWM: absolute counts), 0.5 (``sqrt``) or 1
    #: (``linear``), rounded half up. ``sqrt`` keeps constant the number of
    #: references in which two *unrelated* blocking tokens meet by chance
    #: (``beta² / N``), i.e. the size of a chance pair-block with
    #: ``blockByPairs``; see ``LinkageProfile.effective``.
    frequencyScaling: Literal["none", "sqrt", "linear"] = "none"
    #: washline: input size (references) at which ``beta``/``sigma`` apply as written.
    frequencyReferenceSize: int = Field(1000, ge=1)
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
    #: washline WeightedTokenMatch: a pair whose agreeing tokens sum to less
    #: than ln N nats of IDF weight (N = ``referenceCount``) scores 0, since that
    #: much agreement is expected between unrelated references by chance
    #: (``hdwm.compare.identifying``; frequency-based Fellegi–Sunter weights).
    identifyingAgreementRule: bool = False
    #: the number of references N the token weights are counted over. Set by
    #: ``effective(n_refs)``, which the engine always calls; not a setting to
    #: write in a profile file (0 = unknown: ``identifyingAgreementRule`` is off).
    referenceCount: int = Field(0, ge=0)
    #: washline (``hdwm.agreement``): Fellegi–Sunter m/u per token class estimated by EM
    #: from the input's candidate pairs. ``off``: not estimated; ``report``: estimated,
    #: logged and written to ``metrics.json`` (``agreement_estimate``), nothing else
    #: changes; ``adaptive``: also used – a pair no rule vetoes whose pattern's
    #: posterior match probability reaches ``agreementMatchProbability`` scores at
    #: least that posterior. Estimated on the driver path (``localMaxReferences``) only.
    agreementEvidence: Literal["off", "report", "adaptive"] = "off"
    agreementMatchProbability: float = Field(0.99, gt=0.5, le=1.0)
    #: runtime field set from the estimate (``hdwm.agreement.profile_update``); not a setting
    #: to write in a profile file: pattern key → posterior of the candidate patterns at or
    #: above ``agreementMatchProbability``.
    agreementMatchPatterns: dict[str, float] = Field(default_factory=dict)
    matrixNumTokenRule: bool = True
    matrixInitialRule: bool = True
    #: washline: with matrixInitialRule, "exact" = a one-letter token scores
    #: 1 only against the identical letter (DWM66); "initial" = it also scores
    #: 1 against a longer token starting with that letter ("J" ~ "JOHN").
    initialRuleMode: Literal["exact", "initial"] = "exact"
    #: washline negative evidence (``hdwm.evidence``): a pair whose given
    #: names conflict, with no long number (identifier/date) agreeing, scores 0.
    givenNameConflictRule: bool = False
    #: washline: what lifts a given-name conflict (``hdwm.evidence.conflicting``):
    #: ``number`` = any long number, identifier or date, within identifierMaxEdits
    #: edits; ``identifier`` = an identifier (not a YYYYMMDD date) within
    #: identifierMaxEdits edits; ``exact_identifier`` = an identifier equal on
    #: both sides. Twins share a date of birth and often hold consecutive SSNs, a
    #: junior's SSN may be a digit or two off his father's: under ``number`` each
    #: lifts the veto between two household members of different given names.
    givenNameConflictLift: Literal["number", "identifier", "exact_identifier"] = "number"
    #: washline negative evidence: the name tokens after the given name of
    #: two references all disagree (``hdwm.evidence.surname_conflict``), with
    #: no long number (within identifierMaxEdits edits) agreeing, scores 0.
    surnameConflictRule: bool = False
    #: washline cluster-level evidence (``hdwm.consistency._surname_group_veto``,
    #: with clusterConsistency): two groups of a component that disagree on the
    #: surname are joined only when a cross pair ties them (a surname token, a
    #: long number or the street address agrees).
    clusterSurnameRule: bool = False
    #: washline cluster-level evidence (``hdwm.consistency._identifier_group_veto``,
    #: with clusterConsistency): two groups that each hold one identifier twice or
    #: more (of one shape), with no identifier agreeing across them, stay apart.
    clusterIdentifierRule: bool = False
    #: washline cluster-level evidence (``hdwm.consistency._member_conflict``): inside a
    #: component, ``identifierConflictRule`` between two members is a cannot-link (true, the
    #: behaviour before 2026-12-06) or, like the surname, only a pairwise veto (false): a
    #: phone changes with a move, and ``clusterIdentifierRule`` still keeps apart two
    #: groups that each confirm a different identifier. ``estimated``: false when the input's
    #: candidate pairs read as persons whose identifiers change, not households
    #: (``hdwm.agreement.identifiers_change_with_moves``), else true; read from inputs of at
    #: most ``hdwm.agreement.ESTIMATE_MAX_REFERENCES`` references (either loop), true above it.
    clusterIdentifierConflict: bool | Literal["estimated"] = True
    #: washline negative evidence: a pair whose identifier tokens (all-digit,
    #: ≥ identifierMinLen digits, not a YYYYMMDD date) all disagree, and whose
    #: given names do not agree, scores 0.
    identifierConflictRule: bool = False
    #: washline positive evidence: given names agree and two identifiers are
    #: within identifierMatchMaxEdits edits -> the pair scores 1.0.
    identifierMatchRule: bool = False
    identifierMatchMaxEdits: int = Field(1, ge=0)
    #: washline: with identifierMatchRule, a name part that gives an initial
    #: instead of a given name agrees when its initials and surname agree with
    #: the other's (``hdwm.evidence.initials_agree``).
    identifierMatchInitials: bool = False
    #: shortest all-digit token (digits) taken as an identifier/long number.
    identifierMinLen: int = Field(7, ge=4)
    #: two long numbers within this many Damerau–Levenshtein edits agree.
    identifierMaxEdits: int = Field(2, ge=0)
    #: given names with Jaro–Winkler similarity at or above this never conflict.
    givenNameMinSimilarity: float = Field(0.7, ge=0.0, le=1.0)
    #: washline household evidence (``hdwm.evidence``): a long number held by
    #: references whose given names conflict (a shared phone line, twins'
    #: date of birth) is a household identifier, never personal evidence.
    #: washline: the given name is the name token seen first most often over
    #: the input (``hdwm.evidence.given_name_first``), not always the first
    #: token ("SMITH, JOHN" layouts).
    givenNameFromData: bool = False
    householdIdentifierRule: bool = False
    #: washline: both references hold exactly one full date, the dates differ
    #: by more than one edit and by at least 15 years, and no identifier agrees
    #: within identifierMatchMaxEdits edits -> score 0 (a junior and a senior of
    #: one name and address).
    dateOfBirthConflictRule: bool = False
    #: washline positive evidence: the same given name, another name token
    #: and one full date of birth each (within one edit) -> the pair scores 1.0.
    dateOfBirthMatchRule: bool = False
    #: washline: JR vs SR (II vs III, ...) in the name part -> score 0.
    generationConflictRule: bool = False
    #: washline: two frequent given names with the same first letter that are
    #: different names (JOHN/JAMES; not a nickname, prefix or typo) conflict.
    commonGivenNameRule: bool = False
    #: washline cluster consistency (``hdwm.consistency``): closure never joins
    #: two groups holding a conflicting pair (cannot-link constrained single
    #: linkage inside each connected component).
    clusterConsistency: bool = False
    #: largest component (references) regrouped by clusterConsistency; a larger
    #: one is no cluster at that mu (its references stay unassigned and are
    #: linked again at the next mu), counted in the log and metrics.
    consistencyMaxComponent: int = Field(2000, ge=3)
    mu: float = Field(0.5, ge=0.0, le=1.0)
    muIterate: float = Field(0.10, gt=0.0, le=1.0)
    #: washline: skip the iteration work that cannot change the result
    #: (``hdwm.pipeline``: candidates blocked and scored once per set of
    #: unassigned references, an iteration with the same links as the last
    #: one that accepted nothing costs no Spark job, accepted references are
    #: removed from the blocks instead of blocking again). ``false`` runs the
    #: plain DWM loop (block, score, cluster and grade every iteration): the
    #: same partition, slower; for checking.
    iterationShortcut: bool = True

    # --- the entity registry (washline; ``hdwm.incremental``) ---
    #: which registry references a night links with (``hdwm.incremental.candidate_references``):
    #: ``pair_key`` – every holder of a pair key or frequent-name pair a night reference holds;
    #: ``ranked`` – per night reference only the ``registryTopEntities`` best entities among them
    #: (``ranked_candidates``), so a night's cost is bounded by the night's size;
    #: ``scored`` – as ``ranked``, but the best entities by key weight are re-ranked by the
    #: comparator's score and those below ``mu`` dropped (``scored_candidates``);
    #: ``block_key`` / ``token`` – wider, for measurement. Not a DWM parameter (DWM links one batch).
    registryNeighbourhood: Literal["block_key", "pair_key", "ranked", "scored", "token"] = "pair_key"
    #: with ``registryNeighbourhood: ranked`` or ``scored``: entities kept per night reference (≥ 1).
    registryTopEntities: int = Field(10, ge=1)
    #: with ``registryNeighbourhood: scored``: entities per night reference, best by key weight,
    #: whose members the comparator scores (the pool the ``registryTopEntities`` are chosen from; ≥ 1)
    registryScoredPool: int = Field(10, ge=1)
    #: with ``registryNeighbourhood: scored``: members of one pooled entity scored against a night
    #: reference, best by key weight (≥ 1). Pool × members bounds the pairs scored per night reference.
    registryScoredMembers: int = Field(3, ge=1)
    #: whether the neighbourhood rules see the tokens after the population's global correction
    #: (DWM25; ``hdwm.incremental.candidate_references(correction=…)``), as the engine's blocking
    #: does: a night reference with a misspelt name then shares its keys with the registry. Only
    #: with ``runGlobalCorrection``. ``false``: raw tokens (the rule before b675bb7).
    registryCorrectedTokens: bool = True
    #: when a night may split a registry entity (``hdwm.incremental.apply_split_policy``):
    #: ``engine`` – whenever the relink puts its members in several clusters;
    #: ``night_evidence`` – only when one of the parts joins a night reference or
    #: another entity (a relink that only regroups its own members is undone);
    #: ``never`` – the parts are put back together with whatever they joined
    #: (only human cannot-links and the full rebuild split).
    registrySplits: Literal["engine", "night_evidence", "never"] = "night_evidence"
    #: members of one neighbourhood entity relinked with the night (``hdwm.incremental.bounded_members``):
    #: ``0`` – every member (the entity comes in whole); ``M ≥ 1`` – the members the neighbourhood
    #: rule found (and those named by human decisions), then the most recently seen up to M in
    #: all; the others follow their entity's part that holds most of its relinked members. Bounds
    #: what a night relinks when entities grow night after night (incremental linkage: "entities already in the
    #: registry are not re-linked from scratch every night").
    registryEntityMembers: int = Field(0, ge=0)

    # --- cluster quality (DWM90/95) ---
    epsilon: float = Field(0.50, ge=0.0, le=1.0)
    epsilonIterate: float = Field(0.0, ge=0.0, le=1.0)

    # --- connected components (washline, Kiveris et al. 2014) ---
    ccCheckpointInterval: int = Field(3, ge=1)
    ccMaxRounds: int = Field(50, ge=1)
    #: washline (speed): an iteration's links of at most this many edges are closed on the driver
    #: (``hdwm.closure.local_components``, SciPy) instead of large-star/small-star rounds of Spark
    #: jobs, and components to check for consistency holding at most this many references are
    #: regrouped on the driver (``hdwm.consistency.consistent_clusters``) instead of in a pandas UDF;
    #: 0 = always Spark. The clusters are the same either way.
    ccLocalMaxEdges: int = Field(500_000, ge=0)
    #: washline (speed): an input of at most this many references runs its iterations on the driver
    #: (``hdwm.local``: the same rules, no Spark job per step) once tokens, frequencies and comparison
    #: features are computed on Spark; larger inputs, and ``iterationShortcut: false`` (the plain
    #: loop kept as the reference), iterate on Spark. 0 = always Spark. The clusters are the same.
    localMaxReferences: int = Field(10_000, ge=0)

    @field_validator("agreementEvidence", mode="before")
    @classmethod
    def _agreement_off(cls, v):
        # YAML 1.1 reads an unquoted ``off`` as false
        return "off" if v is False else v

    @model_validator(mode="after")
    def _check_relations(self) -> "LinkageProfile":
        if not (2 <= self.beta < self.sigma):
            raise ValueError(f"beta must be ≥ 2 and < sigma (beta={self.beta}, sigma={self.sigma})")
        if self.runGlobalCorrection and self.maxFreqErrToken >= self.minFreqStdToken:
            raise ValueError(
                "maxFreqErrToken must be < minFreqStdToken "
                f"(maxFreqErrToken={self.maxFreqErrToken}, minFreqStdToken={self.minFreqStdToken})"
            )
        if self.identifierConflictRule and self.identifierMaxEdits >= self.identifierMinLen:
            raise ValueError(
                "identifierMaxEdits must be < identifierMinLen "
                f"(identifierMaxEdits={self.identifierMaxEdits}, identifierMinLen={self.identifierMinLen})"
            )
        return self

    def effective(self, n_refs: int) -> "LinkageProfile":
        """The profile with ``beta``/``sigma`` scaled for an input of ``n_refs`` references.

        ``beta_eff = ⌊beta·f + ½⌋`` and ``sigma_eff = ⌊sigma·f + ½⌋`` with
        ``f = frequency_scale(n_refs, frequencyScaling, frequencyReferenceSize)``
        (``f = 1`` up to ``frequencyReferenceSize`` references, so small
        inputs see the profile's own values). Why ``sqrt`` (the default
        profile's choice): DWM (Talburt et al. 2020) sets ``beta``/``sigma``
        as absolute counts for 1,000-reference samples; at 1M references every
        name, street and date exceeds ``beta = 16`` and nothing blocks. Two
        independent tokens of frequency ``f₁``, ``f₂`` share about
        ``f₁·f₂ / N`` references by chance, so with ``beta ∝ √N`` a pair block
        of unrelated tokens stays as small as at the reference size
        (16²/1,000 ≈ 0.26 references), while ``linear`` would grow it with N
        (and the pairs compared quadratically). ``sigma`` scales by the same
        factor, so the ratio ``sigma / beta`` – DWM's gap between blocking and
        stop tokens – is kept. The correction thresholds
        (``minFreqStdToken``, ``maxFreqErrToken``) stay absolute: a misspelt
        token is rare at any input size.

        Returns:
            a copy with ``referenceCount = n_refs`` (and beta/sigma as written
            when the factor is 1).

        Raises:
            ValueError: ``n_refs < 0``.
        """
        f = frequency_scale(n_refs, self.frequencyScaling, self.frequencyReferenceSize)
        if f == 1.0:
            return self.model_copy(update={"referenceCount": int(n_refs)})
        beta = int(math.floor(self.beta * f + 0.5))
        sigma = int(math.floor(self.sigma * f + 0.5))
        return self.model_copy(update={"beta": beta, "sigma": sigma, "referenceCount": int(n_refs)})

    def effective_summary(self, n_refs: int) -> dict:
        """Dict for logs and ``metrics.json``: ``references``, ``frequencyScaling``,
        ``frequencyReferenceSize``, ``scale`` (the factor), ``beta``/``sigma``
        (effective) and ``beta_profile``/``sigma_profile`` (as written)."""
        eff = self.effective(n_refs)
        return {
            "references": int(n_refs),
            "frequencyScaling": self.frequencyScaling,
            "frequencyReferenceSize": self.frequencyReferenceSize,
            "scale": round(frequency_scale(n_refs, self.frequencyScaling, self.frequencyReferenceSize), 4),
            "beta": eff.beta,
            "sigma": eff.sigma,
            "beta_profile": self.beta,
            "sigma_profile": self.sigma,
        }


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
        ProfileError: file not found or unreadable, not UTF-8, not a YAML mapping, or invalid values
            (the message lists each bad field, e.g. "beta must be ≥ 2 and < sigma").
    """
    if isinstance(name_or_path, LinkageProfile):
        return name_or_path
    path = _resolve(name_or_path or "default")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ProfileError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from exc
    except UnicodeDecodeError as exc:
        raise ProfileError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from exc
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read the profile: {exc.strerror or exc}") from exc
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
