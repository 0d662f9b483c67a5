"""Token alias folding before frequencies (washline; profile ``foldAbbreviations``).

A reference token that is a known variant of a standard word is replaced by
the standard form, so ``AVENUE``/``AVNUE``/``AV`` and ``AVE`` are one token
(one frequency, exact equality in the comparators, shared blocking keys).

Sources:

* street suffixes: USPS Publication 28, Appendix C1 "Street Suffix
  Abbreviations" (primary name and common variants → the USPS standard
  abbreviation); only one-token suffixes, and only the common ones;
* US states: USPS two-letter codes for one-word state names, plus the
  historical abbreviations still seen in addresses (``CALIF``, ``FLA``,
  ``TEX``, ``ARK`` ...); AU state names of one word (``QUEENSLAND`` → ``QLD``).

Deliberately absent: words that are also names or common words
(``VICTORIA``, ``GEORGIA``, ``WASHINGTON``, ``VIRGINIA``; ``DEL``, ``MISS``,
``ILL``, ``IND``, ``ORE``, ``CAL``, ``ARK``), ``WY`` (both WAY and Wyoming), and
multi-word names (``NEW YORK``), which a token-wise map cannot fold.
"""

from __future__ import annotations

from pyspark.sql import functions as F

_SUFFIXES = {
    "AVE": ("AVENUE", "AV", "AVEN", "AVENU", "AVN", "AVNUE"),
    "BLVD": ("BOULEVARD", "BOUL", "BOULV"),
    "CIR": ("CIRCLE", "CIRC", "CIRCL", "CRCL", "CRCLE"),
    "CT": ("COURT",),
    "CRES": ("CRESCENT", "CRSENT", "CRSNT"),
    "DR": ("DRIVE", "DRIV", "DRV"),
    "HWY": ("HIGHWAY", "HIGHWY", "HIWAY", "HIWY", "HWAY"),
    "LN": ("LANE",),
    "PKWY": ("PARKWAY", "PARKWY", "PKWAY", "PKY"),
    "PL": ("PLACE",),
    "RD": ("ROAD",),
    "ST": ("STREET", "STRT", "STR"),
    "TER": ("TERRACE", "TERR"),
    "TRL": ("TRAIL", "TRAILS", "TRLS"),
}

_STATES = {
    "AL": ("ALABAMA",), "AK": ("ALASKA",), "AZ": ("ARIZONA", "ARIZ"), "AR": ("ARKANSAS", "ARKAN"),
    "CA": ("CALIFORNIA", "CALIF", "CALI"), "CO": ("COLORADO", "COLO"), "CT": ("CONNECTICUT", "CONN"),
    "DE": ("DELAWARE",), "FL": ("FLORIDA", "FLA"), "HI": ("HAWAII",), "ID": ("IDAHO",),
    "IL": ("ILLINOIS",), "IN": ("INDIANA",), "IA": ("IOWA",), "KS": ("KANSAS", "KANS"),
    "KY": ("KENTUCKY",), "LA": ("LOUISIANA",), "ME": ("MAINE",), "MD": ("MARYLAND",),
    "MA": ("MASSACHUSETTS", "MASS"), "MI": ("MICHIGAN", "MICH"), "MN": ("MINNESOTA", "MINN"),
    "MS": ("MISSISSIPPI",), "MO": ("MISSOURI",), "MT": ("MONTANA", "MONT"), "NE": ("NEBRASKA", "NEBR"),
    "NV": ("NEVADA", "NEV"), "OH": ("OHIO",), "OK": ("OKLAHOMA", "OKLA"), "OR": ("OREGON",),
    "PA": ("PENNSYLVANIA",), "TN": ("TENNESSEE", "TENN"), "TX": ("TEXAS", "TEX"), "UT": ("UTAH",),
    "VT": ("VERMONT",), "WI": ("WISCONSIN", "WIS"), "WY": ("WYOMING", "WYO"),
    "QLD": ("QUEENSLAND",), "TAS": ("TASMANIA",),
}


def alias_map() -> dict[str, str]:
    """variant → standard form (upper case), suffixes and states together."""
    out: dict[str, str] = {}
    for table in (_SUFFIXES, _STATES):
        for std, variants in table.items():
            for v in variants:
                out[v] = std
    return out


ALIASES = alias_map()


def fold_tokens(tokens):
    """Pure-Python fold (the same rule as ``fold_column``), for tests and docs."""
    return [ALIASES.get(t, t) for t in tokens]


def fold_column(arr):
    """Column array<string> → array<string> with each alias replaced (order kept)."""
    items = []
    for k, v in sorted(ALIASES.items()):
        items += [F.lit(k), F.lit(v)]
    m = F.create_map(*items)
    return F.transform(arr, lambda t: F.coalesce(F.element_at(m, t), t))
