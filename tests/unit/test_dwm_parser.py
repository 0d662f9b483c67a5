"""benchmarks/dwm_parser.py: the layout-agnostic field parser used by the Splink peer.

Real S8P rows (skipped without ../shared) and handmade rows for every layout kind: name as one
field / split / LAST, FIRST; ids first; exploded or compact addresses; blank fields; glued
tokens; every SSN, date and phone format.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import dwm_parser as dp  # noqa: E402


def fields(line: str) -> list[str]:
    return line.split(",")


def parsed(line: str, hints: dp.Hints | None = None, **expected):
    r = dp.parse_reference(fields(line), hints)
    assert set(r) == set(dp.FIELDS)
    got = {k: r[k] for k in expected}
    assert got == expected, r
    return r


# ----------------------------------------------------------------------------- real S8P rows

@pytest.fixture(scope="module")
def s8p(shared_dir):
    path = shared_dir / "data" / "dwm" / "S8P.txt"
    rows = dict(dp.read_references(path))
    return rows, dp.learn_hints(rows.values()), path


def test_s8p_row_with_po_box_ssn_and_year(s8p):
    rows, hints, _ = s8p
    r = dp.parse_reference(rows["A912969"], hints)
    assert r == {"first_name": "BARBAAR", "middle_name": None, "last_name": "MYERS-CHRISTIAN",
                 "street_number": "3536", "street": "N BERLIN AVE", "city": "FRESNO", "state": "CA",
                 "zip": "93722", "po_box": "5991", "ssn": "010525974", "dob": "1936", "phone": None}


def test_s8p_po_box_typo_state_name_and_spreadsheet_serial_date(s8p):
    rows, hints, _ = s8p
    # b,chavez,9247,TOBIAES,AVE,PNORAMA,CITY,,CALIFORNIA,91402,pomst,office,4601,...,10525974,1936
    r = dp.parse_reference(rows["A915784"], hints)
    assert (r["first_name"], r["last_name"], r["street"], r["city"], r["state"], r["zip"], r["po_box"],
            r["ssn"], r["dob"]) == ("B", "CHAVEZ", "TOBIAES AVE", "PNORAMA CITY", "CA", "91402", "4601",
                                    "010525974", "1936")
    # ...,10525974,13376, : 13376 days after 1899-12-30 is the 19360814 of another reference of her
    r = dp.parse_reference(rows["A935183"], hints)
    # (barbara,chavez,11881,GULF,POINTE,DRIV,APT,E38,HOUSTON,,TX,77089,,,10525974,13376,)
    assert (r["street_number"], r["street"], r["city"], r["ssn"], r["dob"]) == \
        ("11881", "GULF POINTE DR", "HOUSTON", "010525974", "1936-08-14")
    assert dp.parse_reference(rows["A933400"], hints)["dob"] == "1936-08-14"


def test_s8p_unit_misspelled_suffix_and_typo_zip(s8p):
    rows, hints, _ = s8p
    # CLYDE,M,MYERS-CHRISTIAN,2943,N,COTTONWOOD,ST,UNIT,3,ORANGE,,CALIF.,92865,,,10534576,16961,
    r = dp.parse_reference(rows["A916465"], hints)
    assert (r["first_name"], r["middle_name"], r["last_name"], r["street_number"], r["street"], r["city"],
            r["state"], r["zip"], r["ssn"], r["dob"]) == \
        ("CLYDE", "M", "MYERS-CHRISTIAN", "2943", "N COTTONWOOD ST", "ORANGE", "CA", "92865", "010534576",
         "1946-06-08")
    # daniel,m,war,6825,hendry,drive,Lake,Worth,,Fl,3346e3,POST,OFFICE,5913,LAKE,WORTH,,FLA.,33466,,
    r = dp.parse_reference(rows[next(k for k, v in rows.items() if "3346e3" in v)], hints)
    assert (r["street"], r["city"], r["state"], r["zip"], r["po_box"]) == \
        ("HENDRY DR", "LAKE WORTH", "FL", "33463", "5913")


def test_s8p_city_without_suffix_found_from_the_file(s8p):
    rows, hints, _ = s8p
    # LUIS,PEREZ,4265,N,CORDOBA,STRT,SPRING,VALLEY,,CA,91977 - VALLEY is no street suffix;
    # SPRING VALLEY is a city elsewhere in the file
    assert hints.is_city(("SPRING", "VALLEY"))
    r = dp.parse_reference(rows["A925730"], hints)
    assert (r["street"], r["city"], r["zip"]) == ("N CORDOBA ST", "SPRING VALLEY", "91977")


def test_s8p_whole_file_parses(s8p):
    _, _, path = s8p
    out = dp.parse_file(path)
    assert len(out) == 1000 and len({r["unique_id"] for r in out}) == 1000
    found = {k: sum(r[k] is not None for r in out) for k in dp.FIELDS}
    # every S8P reference has a surname and (all but a few) an address with a state
    assert found["last_name"] == 1000
    assert found["street_number"] >= 990 and found["city"] >= 990 and found["state"] >= 980
    assert all(r["ssn"] is None or (len(r["ssn"]) == 9 and r["ssn"].isdigit()) for r in out)
    assert all(r["zip"] is None or (len(r["zip"]) == 5 and r["zip"].isdigit()) for r in out)
    assert all(r["state"] is None or r["state"] in dp.STATES for r in out)
    # S8P writes FIRST [M] LAST throughout: the file-wide hints must not swap any name
    rows, hints, _ = s8p
    assert not any(dp._parse(dp.tokenize(f), hints).get("_name_swapped") for f in rows.values())


# ----------------------------------------------------------------------------- handmade layouts

def test_name_as_one_field_compact_address_and_typed_values():
    parsed("John Q Smith,123 Main Street,Springfield,IL,62701,123-45-6789,03/15/1980,(217) 555-0134",
           first_name="JOHN", middle_name="Q", last_name="SMITH", street_number="123", street="MAIN ST",
           city="SPRINGFIELD", state="IL", zip="62701", ssn="123456789", dob="1980-03-15",
           phone="2175550134")


def test_last_comma_first_as_two_fields_and_quoted():
    # the comma of "SMITH, JOHN Q" splits the field in a comma-separated file; the blank stays
    parsed("SMITH, JOHN Q,123 N OAK AVE,AUSTIN,TX,78701", first_name="JOHN", middle_name="Q",
           last_name="SMITH", street="N OAK AVE")
    r = dp.parse_reference(["SMITH, JOHN Q", "123 N OAK AVE", "AUSTIN", "TX", "78701"])
    assert (r["first_name"], r["middle_name"], r["last_name"]) == ("JOHN", "Q", "SMITH")


def test_last_first_middle_without_comma_by_trailing_initial_and_by_file_hints():
    parsed("GARCIA MARIA L,POST OFFICE BOX 12,AUSTIN,,TEXAS,78710", first_name="MARIA",
           middle_name="L", last_name="GARCIA", po_box="12", city="AUSTIN", state="TX", zip="78710")
    # GARCIA closes names and MARIA opens them elsewhere in the file -> GARCIA MARIA is LAST FIRST
    refs = [fields(x) for x in ("MARIA,GARCIA,1 A ST,X,,TX,78701", "JOSE,GARCIA,2 B ST,X,,TX,78701",
                                "MARIA,LOPEZ,3 C ST,X,,TX,78701", "ANA,GARCIA,4 D ST,X,,TX,78701",
                                "MARIA,RUIZ,5 E ST,X,,TX,78701")]
    hints = dp.learn_hints(refs)
    parsed("GARCIA,MARIA,9 F AVE,Y,,TX,78702", hints, first_name="MARIA", last_name="GARCIA")
    parsed("MARIA,GARCIA,9 F AVE,Y,,TX,78702", hints, first_name="MARIA", last_name="GARCIA")


def test_ids_first_exploded_address_with_unit():
    parsed("123456789,JOHN,SMITH,19800315,123,MAIN,ST,APT,4B,SPRINGFIELD,,IL,62701",
           ssn="123456789", dob="1980-03-15", first_name="JOHN", last_name="SMITH", street_number="123",
           street="MAIN ST", city="SPRINGFIELD", state="IL", zip="62701")
    parsed("(206) 383-1644,207530704,ADRIAN,T,baker,salem,oregon,97302", phone="2063831644",
           ssn="207530704", first_name="ADRIAN", middle_name="T", last_name="BAKER", city="SALEM",
           state="OR", zip="97302", street=None)


def test_address_before_name_and_year_before_name():
    parsed("123 N Oak Avenue,Austin,TX,78701,MARIA GARCIA,2175550134,1975", street_number="123",
           street="N OAK AVE", city="AUSTIN", state="TX", zip="78701", first_name="MARIA",
           last_name="GARCIA", phone="2175550134", dob="1975")
    parsed("1979,Curtis,manuel,GRIFFIN-MASEN,218 eagle,panorama city,,ca,91405", dob="1979",
           first_name="CURTIS", middle_name="MANUEL", last_name="GRIFFIN-MASEN", street_number="218",
           city="PANORAMA CITY", state="CA", zip="91405")


@pytest.mark.parametrize("text, dob", [
    ("19800315", "1980-03-15"), ("03/15/1980", "1980-03-15"), ("3/5/80", "1980-03-05"),
    ("1980-03-15", "1980-03-15"), ("1980", "1980"),
    ("3/5/19", "2019-03-05"),
    ("02/30/1980", "1980"),  # no such day: the year is kept
])
def test_birth_date_formats(text, dob):
    parsed(f"ANN,LEE,{text}", dob=dob, first_name="ANN", last_name="LEE")


def test_spreadsheet_day_serial_after_an_id_is_a_birth_date_but_after_a_word_a_zip():
    parsed("ANN,LEE,123456789,29295", dob="1980-03-15", ssn="123456789", zip=None)
    parsed("ANN,LEE,12 ELM ST,TOWN,29295", dob=None, zip="29295", city="TOWN")


@pytest.mark.parametrize("text, ssn", [
    ("123-45-6789", "123456789"), ("123 45 6789", "123456789"), ("123456789", "123456789"),
    ("10525974", "010525974"),  # leading zero lost in a spreadsheet
])
def test_ssn_formats(text, ssn):
    parsed(f"ANN,LEE,{text}", ssn=ssn)


@pytest.mark.parametrize("text, phone", [
    ("(501) 555-0134", "5015550134"), ("501-555-0134", "5015550134"), ("501.555.0134", "5015550134"),
    ("5015550134", "5015550134"), ("555-0134", "5550134"),
])
def test_phone_formats(text, phone):
    parsed(f"ANN,LEE,{text}", phone=phone, ssn=None)


@pytest.mark.parametrize("box", ["PO BOX 77", "P.O. BOX 77", "POST OFFICE BOX 77", "pomst,office,77",
                                 "Pco,Box,77", "o,box,77", "PO,OX,77", "POB 77", "BOX 77"])
def test_po_box_spellings(box):
    parsed(f"ANN,LEE,{box},SPRINGFIELD,,IL,62705", po_box="77", city="SPRINGFIELD", state="IL",
           zip="62705", street_number=None)


@pytest.mark.parametrize("state, code", [
    ("CA", "CA"), ("Calif.", "CA"), ("CALIFONIA", "CA"), ("californifa", "CA"), ("fla.", "FL"),
    ("TEXAS", "TX"), ("tfx", "TX"), ("New York", "NY"), ("NSEW YORK", "NY"), ("ARKAN", "AR"),
])
def test_state_spellings(state, code):
    parsed(f"ANN,LEE,12,ELM,ST,TOWN,,{state},12345", state=code, zip="12345", city="TOWN", street="ELM ST")


def test_damaged_zips_and_zip_plus_four():
    parsed("ANN,LEE,12,ELM,ST,TOWN,,CA,95r765", zip="95765")
    parsed("ANN,LEE,12 ELM ST,TOWN,CA,95765-1234", zip="95765")
    parsed("ANN,LEE,12,ELM,ST,TOWN,,CA,9576,,,123456789", zip=None, state="CA", city="TOWN",
           ssn="123456789")
    parsed("ANN,LEE,12 ELM ST,PHOENIX,,85013,1982", zip="85013", city="PHOENIX", dob="1982", state=None)


def test_glued_and_shifted_fields():
    parsed("MARK,A,GONZALES,11494HUNTINGTON,VILLAGE,LANE,Gold,River,,Californa,95670",
           street_number="11494", street="HUNTINGTON VILLAGE LN", city="GOLD RIVER", state="CA")
    parsed(",,BETTY,,ROBERTA,ZELLEY,,25339 PEKAN AVENUE,MELBOURNE,,,FL,32906", first_name="BETTY",
           street="PEKAN AVE", city="MELBOURNE", state="FL", zip="32906")


def test_route_numbers_and_units_stay_out_of_the_city():
    parsed("SENA,S,NORMAN,231,COUNTY,ROAD,2801,W,,Mico,,Tx,78056", street_number="231",
           street="COUNTY RD 2801 W", city="MICO")
    parsed("luis,perez,333,WEST,GARVEY,AVENUE,#,B161,MONTEREY,PARK,,CA,91754", street="W GARVEY AVE",
           city="MONTEREY PARK")
    parsed("amanda,d,fernandez,2 washington apt#10b,laredo,,texas,78045", street="WASHINGTON",
           city="LAREDO", state="TX")


def test_name_suffixes_and_titles_are_dropped():
    parsed("john m arnold jr,rowlett,tx,75093", first_name="JOHN", middle_name="M", last_name="ARNOLD",
           city="ROWLETT", state="TX", zip="75093")
    parsed("MR,JOHN,SMITH,III,12 ELM ST,TOWN,,CA,95765", first_name="JOHN", last_name="SMITH",
           middle_name=None)


@pytest.mark.parametrize("junk", [[], None, [""], [None, 5, "", ",,,", "###", "-"], ["BOX"], ["PO", "BOX"],
                                  ["123"], ["CA", "95765"], ["APT", "4", "#"], ["\u00e9\u00e8", "\x00"]])
def test_odd_input_never_raises_and_gives_all_fields(junk):
    r = dp.parse_reference(junk)
    assert set(r) == set(dp.FIELDS)


def test_random_token_soup_never_raises():
    rnd = random.Random(12)
    vocab = ["PO", "BOX", "APT", "#", "ST", "AVE", "CA", "NEW", "YORK", "SMITH", "JOHN", "M", "", " ",
             "123", "95765", "123-45-6789", "1/2/33", "19800315", "2019", "(501) 555-0134", "A1B", "-",
             "SMITH, JOHN", "POST", "OFFICE", "N", "COUNTY", "ROAD", "12e45"]
    for _ in range(3000):
        f = [rnd.choice(vocab) for _ in range(rnd.randint(0, 14))]
        r = dp._parse(dp.tokenize(f), None)  # the internal parser itself must not raise
        assert r["zip"] is None or (len(r["zip"]) == 5 and r["zip"].isdigit())
        assert r["dob"] is None or len(r["dob"]) in (4, 10)


def test_read_references_line_endings_and_quotes(tmp_path):
    p = tmp_path / "x.txt"
    p.write_bytes(b'RecID,Name\rA1,"SMITH, JOHN",12 ELM ST\r\nA2,ann,lee\n')
    assert dp.read_references(p) == [("A1", ["SMITH, JOHN", "12 ELM ST"]), ("A2", ["ann", "lee"])]
    out = dp.parse_file(p)
    assert [r["unique_id"] for r in out] == ["A1", "A2"]
    assert (out[0]["first_name"], out[0]["last_name"], out[1]["first_name"]) == ("JOHN", "SMITH", "ANN")


def test_glued_name_is_split_with_the_file_vocabulary():
    refs = [fields(x) for x in ("DAVID,RHODES,1 A ST,X,,FL,33447", "DAVID,LEE,2 B ST,X,,FL,33447",
                                "DAVID,KIM,3 C ST,X,,FL,33447", "ANN,RHODES,4 D ST,X,,FL,33447",
                                "JOHN,SMITH,5 E ST,X,,FL,33447", "JOHN,RHODES,6 F ST,X,,FL,33447",
                                "JOHN,DOE,7 G ST,X,,FL,33447", "MARY,SMITH,8 H ST,X,,FL,33447",
                                "JOHN,ROE,9 I ST,X,,FL,33447", "ANN,SMITH,10 J ST,X,,FL,33447")]
    hints = dp.learn_hints(refs)
    parsed("DAVIDRHODEZ,252726884", hints, first_name="DAVID", last_name="RHODEZ", ssn="252726884")
    parsed("SMITHJOHN,12 ELM ST,X,,FL,33447", hints, first_name="JOHN", last_name="SMITH")
    # a known surname stays whole; without hints nothing is split
    parsed("RHODES,252726884", hints, first_name=None, last_name="RHODES")
    parsed("DAVIDRHODEZ,252726884", first_name=None, last_name="DAVIDRHODEZ")
