"""The source declarations (spark_jobs/sourcecontract): the pydantic models of
sources.yaml, their error messages, and the header rule of the cleanse job."""

from __future__ import annotations

import pytest

import sourcecontract as S

# ---------------------------------------------------------------------------
# sources.yaml
# ---------------------------------------------------------------------------


def test_repo_sources_yaml_declares_febrl(repo):
    sources = S.load_sources(repo / "include" / "config" / "sources.yaml")
    febrl = sources["febrl"]
    assert febrl.column_names == [
        "rec_id", "given_name", "surname", "street_number", "address_1", "address_2",
        "suburb", "postcode", "state", "date_of_birth", "soc_sec_id",
    ]
    assert febrl.record_id == "rec_id"
    assert febrl.truth_pattern == r"^rec-(\d+)-"
    types = {c.name: c.type for c in febrl.columns}
    assert types["date_of_birth"] == "date" and types["postcode"] == "postcode"
    assert [c.name for c in febrl.attributes][0] == "given_name"


def _doc(**overrides):
    source = {"record_id": "id", "columns": [{"name": "id", "type": "id"}, {"name": "tel", "type": "phone"}]}
    source.update(overrides)
    return {"sources": {"s": source}}


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"record_id": "nope"}, "record_id"),
        ({"columns": [{"name": "id", "type": "id"}, {"name": "x", "type": "money"}]}, "unknown type"),
        ({"columns": [{"name": "id", "type": "id"}, {"name": "d", "type": "date", "formats": ["MM/dd"]}]}, "date formats"),
        ({"columns": [{"name": "id", "type": "id"}, {"name": "id", "type": "text"}]}, "twice"),
        ({"columns": [{"name": "id", "type": "id"}, {"name": "source", "type": "text"}]}, "clash"),
        ({"columns": [{"name": "id", "type": "text"}]}, "must have type 'id'"),
        ({"truth_pattern": "rec-\\d+"}, "capturing group"),
        ({"truth_pattern": "rec-(\\d+"}, "not a regex"),
        ({"header": False}, "header"),
        ({"csv": {"multiline": "yes"}}, "csv.multiline: must be true or false"),
    ],
)
def test_parse_sources_refuses_bad_declarations(overrides, message):
    with pytest.raises(S.SourceConfigError, match=message):
        S.parse_sources(_doc(**overrides))


def test_parse_sources_accepts_phone_columns():
    spec = S.parse_sources(_doc())["s"]
    assert [(c.name, c.type) for c in spec.columns] == [("id", "id"), ("tel", "phone")]


def test_multiline_is_off_unless_declared(repo):
    assert S.parse_sources(_doc())["s"].multiline is False
    assert S.parse_sources(_doc(csv={"multiline": True}))["s"].multiline is True
    assert S.load_sources(repo / "include" / "config" / "sources.yaml")["febrl"].multiline is False


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"column_map": ["x"]}, "column_map: must be a mapping"),
        ({"column_map": {"phone": "nope"}}, "target must be a declared column"),
        ({"column_map": {"TEL": "id"}}, "already a declared column"),
        ({"column_map": {"phone": "tel", "Phone": "tel"}}, "twice"),
        ({"column_map": {" ": "tel"}}, "empty header name"),
        ({"ignore_columns": "email"}, "must be a list"),
        ({"ignore_columns": ["Tel"]}, "is a declared column"),
        ({"column_map": {"phone": "tel"}, "ignore_columns": ["PHONE"]}, "both in column_map and in ignore_columns"),
    ],
)
def test_header_mapping_is_validated(overrides, message):
    with pytest.raises(S.SourceConfigError, match=message):
        S.parse_sources(_doc(**overrides))


FEBRL_HEADER = ["rec_id", "given_name", "surname", "street_number", "address_1", "address_2", "suburb",
                "postcode", "state", "date_of_birth", "soc_sec_id"]


@pytest.fixture(scope="module")
def febrl(repo):
    return S.load_sources(repo / "include" / "config" / "sources.yaml")["febrl"]


def _with(header, **changes):
    out = list(header)
    for i, name in changes.get("set", {}).items():
        out[i] = name
    for i in sorted(changes.get("drop", ()), reverse=True):
        del out[i]
    return out + list(changes.get("add", ()))


@pytest.mark.parametrize(
    "header, problems",
    [
        (FEBRL_HEADER, ()),
        (["\ufeffREC_ID", *[f" {h.upper()} " for h in FEBRL_HEADER[1:]]], ()),  # BOM, case, spaces
        (list(reversed(FEBRL_HEADER)), ()),  # order is free: read by name
        (_with(FEBRL_HEADER, add=["email"]), ("unexpected column 'email'",)),
        (_with(FEBRL_HEADER, set={2: "LastName"}), ("column 3 is 'LastName', declared 'surname'",)),
        (_with(FEBRL_HEADER, drop=[2]), ("missing column 'surname'",)),
        (_with(FEBRL_HEADER, drop=[2], add=["lastname"]), ("unexpected column 'lastname'", "missing column 'surname'")),
        (_with(FEBRL_HEADER, set={3: "surname"}),
         ("column 'surname' appears 2 times (columns 3, 4)", "missing column 'street_number'")),
    ],
)
def test_compare_header_names_each_drifted_column(febrl, header, problems):
    result = S.compare_header(header, febrl)
    assert result.is_header and result.problems == problems
    assert result.ok == (not problems)
    if not problems:
        assert sorted(c for c in result.layout if c) == sorted(FEBRL_HEADER)


def test_compare_header_applies_column_map_and_ignore_columns(febrl):
    spec = S.SourceSpec.model_validate({**febrl.model_dump(), "column_map": {"LastName": "surname"},
                                        "ignore_columns": ["Email"]})
    assert spec.column_map == {"lastname": "surname"} and spec.ignore_columns == ("email",)
    result = S.compare_header(_with(FEBRL_HEADER, set={2: "LastName"}, add=["Email"]), spec)
    assert result.ok
    assert result.layout == (*FEBRL_HEADER[:2], "surname", *FEBRL_HEADER[3:], None)
    assert S.compare_header(_with(FEBRL_HEADER, add=["phone"]), spec).problems == ("unexpected column 'phone'",)


@pytest.mark.parametrize(
    "line",
    [
        "rec-1-org,ann,lee,1,main street,,perth,6000,wa,19800101,111".split(","),  # data, no header
        ["\x00\x01garbage"],
        [],
        ["rec_id", "a", "b", "c"],  # 1 of 4 known: not a header
    ],
)
def test_a_line_that_is_not_a_header_is_not_drift(febrl, line):
    result = S.compare_header(line, febrl)
    assert not result.is_header and result.layout is None
    assert result.problems[0].startswith("first line is not a header")


def test_load_sources_names_the_file(tmp_path):
    path = tmp_path / "sources.yaml"
    path.write_text("sources: [1, 2\n")
    with pytest.raises(S.SourceConfigError, match="not valid YAML"):
        S.load_sources(path)
    with pytest.raises(S.SourceConfigError, match="cannot read"):
        S.load_sources(tmp_path / "missing.yaml")


def test_a_message_names_the_source_the_column_and_the_key():
    doc = _doc(columns=[{"name": "id", "type": "id"}, {"name": "born", "type": "date", "formats": ["MM/dd"]}])
    with pytest.raises(S.SourceConfigError) as err:
        S.parse_sources(doc)
    assert str(err.value).startswith("source 's', column 'born': formats: unknown date formats ['MM/dd']")


def test_every_problem_is_reported_at_once():
    doc = _doc(columns=[{"name": "id", "type": "id"}, {"name": "x", "type": "money"}], csv={"delimiter": ";;"})
    with pytest.raises(S.SourceConfigError) as err:
        S.parse_sources(doc)
    problems = str(err.value).split("; ")
    assert any(p.startswith("source 's', column 'x': type: unknown type 'money'") for p in problems)
    assert "source 's': csv.delimiter: must be one character" in problems


@pytest.mark.parametrize("overrides, message", [
    ({"record_ids": "id"}, "source 's': unknown key 'record_ids'"),
    ({"csv": {"delimter": ";"}}, "source 's': csv: unknown key 'delimter'"),
    ({"columns": [{"name": "id", "type": "id", "colour": "red"}]}, "source 's', column 'id': unknown key 'colour'"),
    ({"name": "other"}, "named by its key"),
])
def test_unknown_keys_are_refused(overrides, message):
    with pytest.raises(S.SourceConfigError, match=message):
        S.parse_sources(_doc(**overrides))


@pytest.mark.parametrize("doc, message", [
    (None, "non-empty 'sources:' mapping"),
    ({"sources": {}}, "non-empty 'sources:' mapping"),
    ({"sources": {"bad-name": {}}}, "not an identifier"),
    ({"sources": {"s": ["id"]}}, "source 's': must be a mapping"),
])
def test_the_file_needs_named_source_mappings(doc, message):
    with pytest.raises(S.SourceConfigError, match=message):
        S.parse_sources(doc)


def test_bare_column_names_are_text_and_absent_options_take_defaults():
    spec = S.parse_sources({"sources": {"s": {"record_id": "id", "columns": [{"name": "id", "type": "id"}, "city"],
                                              "csv": None, "column_map": None, "ignore_columns": None}}})["s"]
    city = spec.columns[1]
    assert (city.name, city.type, city.spark_type) == ("city", "text", "string")
    assert (spec.delimiter, spec.quote, spec.escape, spec.multiline) == (",", '"', "\\", False)
    assert spec.column_map == {} and spec.ignore_columns == ()


def test_source_names_are_sorted(repo):
    assert S.source_names(repo / "include" / "config" / "sources.yaml") == ["febrl", "febrl4a", "febrl4b"]


@pytest.mark.parametrize("name", ["febrl4a", "src_a", "_x", "A" * 64, "crm_2024", "Z9"])
def test_every_declarable_source_name_is_a_valid_registry_key(name):
    # one contract, two checks: sources.yaml names (sourcecontract.NAME) flow through the
    # cleanse job into the entity registry, whose ref_key check (hdwm.registry) must accept them
    import hdwm.registry as registry

    assert S.NAME.match(name)
    assert registry.SOURCE_PATTERN.match(name)


@pytest.mark.parametrize("name", ["", "a b", "a|b", "a/b", "ä"])
def test_what_the_registry_refuses_sources_yaml_refuses_too(name):
    import hdwm.registry as registry

    assert not registry.SOURCE_PATTERN.match(name) and not S.NAME.match(name)
