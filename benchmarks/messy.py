"""Seeded generator of messy person references with households as confounders.

    python benchmarks/messy.py --references 6000 --seed 1 --out /tmp/messy6k_s1.txt \\
        --truth /tmp/messy6k_s1_truth.csv [--stats]
    python benchmarks/messy.py --stats-only FILE.txt [TRUTH.csv] [--stats-only FILE2.txt [TRUTH2.csv] ...]

Output: a DWM sample file like ``S8P.txt`` (see /work/shared/data/dwm/PARAMETERS.md):
a header line, then one reference a line, the first comma field the record id
(``M`` + 7 digits, unique), the rest unaligned comma-separated text whose
layout varies row by row. The truth file is ``RecID,IdTruth`` (integer entity
ids), in the same order. LF line endings, UTF-8 (ASCII in practice). Both are
read by ``python -m hdwm --format dwm --truth`` (``hdwm.readers``).

Importable: ``generate(n_references, seed)`` yields ``(rec_id, fields, entity_id)``
(``fields`` = list[str], the text fields after the id; ``entity_id`` str);
``generate(..., with_layout=True)`` adds a fourth item, the frozenset of layout
kinds the row used (see ``LAYOUT_KINDS``). ``write_dwm(out, truth, n, seed)``
writes both files. ``dwm_stats(path, truth)`` returns the difficulty
statistics, ``stats_table`` renders them as Markdown.

Sources of the phenomena: the DWM sample S8P (Talburt et al., UALR, Data Washing
Machine) for the layouts and error kinds; US practice for SSN/DOB/phone formats,
suffixes (JR/SR/II/III) and USPS street-suffix abbreviations (Publication 28).
The name, street and city pools are built in (no Faker), so the product venv
runs it too and the bytes never depend on which packages are installed.

Determinism: one ``random.Random(seed)`` drives everything; the same
``(n_references, seed)`` gives byte-identical files. Memory: households are
generated one at a time; rendered rows go through a fixed 4,096-row shuffle
window (so household members are not adjacent), then are written; memory does
not grow with ``n_references``.

Population model (probabilities per household / person / reference):

* Household kinds: single person 0.34; couple 0.20; family = couple + 2-4
  children 0.18 (single-parent family 0.04); roommates (2-3 unrelated people,
  different surnames, one or two shared addresses and the landline, an own
  earlier address 0.6, a later one 0.5) 0.12;
  junior/senior (father and son with the same first, middle and surname,
  mother present 0.6, another child 0.3) 0.12. Most references belong to people
  who share an address with someone else in the file.
* Couples: the wife keeps her maiden name 0.15, else takes the husband's
  surname (and of those 0.25 write it hyphenated ``MAIDEN-MARRIED`` sometimes).
  A wife has 1-2 addresses of her own before the marriage with probability 0.6;
  references from then carry her maiden surname.
* Families: twins 0.3 (of families with 2+ children): same DOB and surname,
  different given names, similar given names (JOHN/JOAN, DANIEL/DANIELLE, ...)
  0.4, consecutive SSNs 0.5. Children share the household's later addresses;
  adult children move out 0.4 (1-2 own addresses).
* Junior/senior: suffix pair (SR, JR) 0.6, (none, JR) 0.15, (JR, III) 0.1,
  (none, II) 0.15; the suffix is written on a reference 0.35; different DOB
  (20-35 years apart); the son's SSN differs from his father's in 1-2 digits
  0.5 (else unrelated); the son lived at the first 1-3 household addresses,
  then moved out 0.7.
* Moves: a household has 1-6 addresses (weights .30/.25/.20/.12/.08/.05, i.e.
  moved 0-5 times), a move stays in the state 0.7 (same city 0.4); members move
  together. Landline per household address 0.6; personal mobile per adult 0.55;
  PO box per address 0.25. Each reference uses one period (address + surname at
  that time) of the person's history, uniformly.
* References per person: 1-8 with weights .20/.19/.16/.13/.11/.09/.07/.05
  (mean 3.56; the last household is cut at ``n_references``).
* Surnames: a list of common US surnames drawn Zipf-like 0.62, a built
  syllable name (KARNOWSKI-like) 0.33, double-barrelled 0.05. Given names: by
  sex, skewed toward the head of each list. SSNs: distinct per person (an
  affine map of the person number modulo a prime) except where noted.

Rendering of one reference:

* Given name: as is 0.60, nickname 0.14 (BOB/ROBERT, PEGGY/MARGARET, ...; as is
  when there is none), initial 0.10, typo 0.09, spelling variant 0.03
  (JON/JOHN, KATHRYN/KATHERINE, or phonetic rules PH/F, C/K, Y/I, double
  letters); missing 0.04 (surname only, as in S8P). Middle name: initial 0.45,
  full 0.10, none 0.45 (people with a middle name: 0.7). Surname: typo 0.09,
  phonetic variant 0.05; a wife who took the hyphenated name writes
  MAIDEN-MARRIED 0.6, maiden 0.1, married 0.3, one who took the plain married name
  writes it hyphenated 0.1. Typos are substitution, insertion, deletion or
  adjacent transposition with equal weight.
* Address: street line 0.90 (house-number typo 0.03, direction prefix on 0.25 of
  addresses, written 0.85, unit on 0.2 of addresses, written 0.8, street-name
  typo 0.10, street suffix left out 0.07, else spelled as any of its variants:
  ST/STREET/STR/STRT, AVE/AVENUE/AV/AVNUE, ...), PO box when the address has one
  0.5 (PO BOX / P.O. BOX / POST OFFICE BOX / BOX / POB; its city, state and zip
  0.7), city 0.95 (typo 0.08),
  state 0.95 (code 0.6, full name 0.25, variant such as CALIF. 0.1, typo 0.05),
  zip 0.93 (digit error 0.04); empty field between city and state 0.5 (S8P).
* SSN 0.50: 123-45-6789 0.40, 123456789 0.30, 123 45 6789 0.15, leading zeros
  dropped 0.15 (as in S8P); digit error 0.10 (substitution or transposition).
* DOB 0.45: YYYYMMDD 0.25, MM/DD/YYYY 0.20, M/D/YY 0.15, YYYY-MM-DD 0.15, year
  only 0.25; digit error 0.08.
* Phone 0.35 (landline of that address if any, 0.6, else the mobile):
  (501) 555-1234, 501-555-1234, 5015551234, 501.555.1234, 555-1234.
* Case per reference: upper 0.50, lower 0.20, title 0.15, mixed per field 0.15.
  Trailing empty fields (1-4) 0.3, as S8P's rows end.

Layout kinds (``LAYOUT_KINDS``), per reference: the name as one field
``full_name`` 0.25 ("JOHN A SMITH"), ``split_name`` 0.55 (first, middle, last
fields), ``last_first`` 0.20 ("SMITH, JOHN A": the comma splits it into two
fields); ``ids_first`` 0.12 of the non-sparse rows that carry an identifier (SSN/DOB/phone
before the name); ``exploded`` 0.55
(the address one token per field, as S8P mostly is; otherwise compact fields
"123 N MAIN ST", "SPRINGFIELD", "IL", "62701"); ``sparse`` 0.10 (the name and
exactly one other item); ``shifted`` 0.15 (1-3 empty fields inserted);
``glued`` 0.08 (two adjacent fields joined without a separator, "SMITHJOHN",
"123MAIN").
"""

from __future__ import annotations

import argparse
import bisect
import csv
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Iterator

LAYOUT_KINDS = ("full_name", "split_name", "last_first", "ids_first", "exploded", "sparse", "shifted", "glued")
HEADER = "RecID,Name,Address,City,State,Zip,PO,Box,POCity,POState,POZip,SSN,DOB,Phone"
_WINDOW = 4096

# --------------------------------------------------------------------------------------------- pools

_MALE = """JAMES JOHN ROBERT MICHAEL WILLIAM DAVID RICHARD JOSEPH THOMAS CHARLES CHRISTOPHER DANIEL MATTHEW
ANTHONY DONALD MARK PAUL STEVEN ANDREW KENNETH JOSHUA KEVIN BRIAN GEORGE EDWARD RONALD TIMOTHY JASON JEFFREY
RYAN JACOB GARY NICHOLAS ERIC JONATHAN STEPHEN LARRY JUSTIN SCOTT BRANDON BENJAMIN SAMUEL FRANK GREGORY
RAYMOND ALEXANDER PATRICK JACK DENNIS JERRY TYLER AARON JOSE ADAM HENRY NATHAN DOUGLAS ZACHARY PETER KYLE
WALTER ETHAN JEREMY HAROLD KEITH CHRISTIAN ROGER NOAH GERALD CARL TERRY SEAN AUSTIN ARTHUR LAWRENCE JESSE
DYLAN BRYAN JOE JORDAN BILLY BRUCE ALBERT WILLIE GABRIEL LOGAN ALAN JUAN WAYNE ROY RALPH RANDY EUGENE VINCENT
RUSSELL ELIJAH LOUIS BOBBY PHILIP JOHNNY LUIS CARLOS MIGUEL JORGE PEDRO MANUEL RAMON ALEJANDRO FERNANDO
RICARDO ROBERTO EDUARDO FRANCISCO JAVIER SANTIAGO ARMANDO RAUL EVERARDO HECTOR MARIO JULIAN ADRIAN CLYDE
PHILLIP LEROY HAROLD MARVIN CURTIS HERMAN GLENN HOWARD EARL FRED DALE LEON TROY MARTIN VICTOR ERNEST""".split()
_FEMALE = """MARY PATRICIA JENNIFER LINDA ELIZABETH BARBARA SUSAN JESSICA SARAH KAREN LISA NANCY BETTY MARGARET
SANDRA ASHLEY KIMBERLY EMILY DONNA MICHELLE CAROL AMANDA DOROTHY MELISSA DEBORAH STEPHANIE REBECCA SHARON
LAURA CYNTHIA KATHLEEN AMY ANGELA SHIRLEY ANNA BRENDA PAMELA EMMA NICOLE HELEN SAMANTHA KATHERINE CHRISTINE
DEBRA RACHEL CAROLYN JANET CATHERINE MARIA HEATHER DIANE RUTH JULIE OLIVIA JOYCE VIRGINIA VICTORIA KELLY
LAUREN CHRISTINA JOAN EVELYN JUDITH MEGAN ANDREA CHERYL HANNAH JACQUELINE MARTHA GLORIA TERESA ANN SARA
MADISON FRANCES KATHRYN JANICE JEAN ABIGAIL ALICE JUDY SOPHIA GRACE DENISE AMBER DORIS MARILYN DANIELLE
BEVERLY ISABELLA THERESA DIANA NATALIE BRITTANY CHARLOTTE MARIE KAYLA ALEXIS LORI ROSALIA MARCELA LIDIA
GUADALUPE ROSA JUANA CARMEN LETICIA YOLANDA VERONICA ALEJANDRA CECILIA FELICITA JEANNE ELENA RONDA NETTIE
DOLORES IRMA ESPERANZA GABRIELA ADRIANA PAULA ROBERTA ERICA JULIA LUCIA ELLEN PEGGY BONNIE TAMMY""".split()
_SURNAMES = """SMITH JOHNSON WILLIAMS BROWN JONES GARCIA MILLER DAVIS RODRIGUEZ MARTINEZ HERNANDEZ LOPEZ GONZALEZ
WILSON ANDERSON THOMAS TAYLOR MOORE JACKSON MARTIN LEE PEREZ THOMPSON WHITE HARRIS SANCHEZ CLARK RAMIREZ LEWIS
ROBINSON WALKER YOUNG ALLEN KING WRIGHT SCOTT TORRES NGUYEN HILL FLORES GREEN ADAMS NELSON BAKER HALL RIVERA
CAMPBELL MITCHELL CARTER ROBERTS GOMEZ PHILLIPS EVANS TURNER DIAZ PARKER CRUZ EDWARDS COLLINS REYES STEWART
MORRIS MORALES MURPHY COOK ROGERS GUTIERREZ ORTIZ MORGAN COOPER PETERSON BAILEY REED KELLY HOWARD RAMOS KIM
COX WARD RICHARDSON WATSON BROOKS CHAVEZ WOOD JAMES BENNETT GRAY MENDOZA RUIZ HUGHES PRICE ALVAREZ CASTILLO
SANDERS PATEL MYERS LONG ROSS FOSTER JIMENEZ POWELL JENKINS PERRY RUSSELL SULLIVAN BELL COLEMAN BUTLER
HENDERSON BARNES GONZALES FISHER VASQUEZ SIMMONS ROMERO JORDAN PATTERSON ALEXANDER HAMILTON GRAHAM REYNOLDS
GRIFFIN WALLACE MORENO WEST COLE HAYES BRYANT HERRERA GIBSON ELLIS TRAN MEDINA AGUILAR STEVENS MURRAY FORD
CASTRO MARSHALL OWENS HARRISON FERNANDEZ MCDONALD WOODS WASHINGTON KENNEDY WELLS VARGAS HENRY CHEN FREEMAN
WEBB TUCKER GUZMAN BURNS CRAWFORD OLSON SIMPSON PORTER HUNTER GORDON MENDEZ SILVA SHAW SNYDER MASON DIXON
MUNOZ HUNT HICKS HOLMES PALMER WAGNER BLACK ROBERTSON BOYD ROSE STONE SALAZAR FOX WARREN MILLS MEYER RICE
SCHMIDT GARZA DANIELS FERGUSON NICHOLS STEPHENS SOTO WEAVER RYAN GARDNER PAYNE GRANT DUNN KELLEY SPENCER
HAWKINS ARNOLD PIERCE VAZQUEZ HANSEN PETERS SANTOS HART BRADLEY KNIGHT ELLIOTT CUNNINGHAM DUNCAN ARMSTRONG
HUDSON CARROLL LANE RILEY ANDREWS ALVARADO RAY DELGADO BERRY PERKINS HOFFMAN JOHNSTON MATTHEWS PENA RICHARDS
CONTRERAS WILLIS CARPENTER LAWRENCE SANDOVAL GUERRERO GEORGE CHAPMAN RIOS ESTRADA ORTEGA WATKINS GREENE
NUNEZ WHEELER VALDEZ HARPER BURKE LARSON SANTIAGO MALDONADO MORRISON FRANKLIN CARLSON AUSTIN DOMINGUEZ
CARR LAWSON JACOBS OBRIEN LYNCH SINGH VEGA BISHOP MONTGOMERY OLIVER JENSEN HARVEY WILLIAMSON GILBERT DEAN
SIMS ESPINOZA HOWELL LI WONG REID HANSON LE MCCOY GARRETT BURTON FULLER WANG WEBER WELCH ROJAS LUCAS MARQUEZ
FIELDS PARK YANG LITTLE BANKS PADILLA DAY WALSH BOWMAN SCHULTZ LUNA FOWLER MEJIA DAVIDSON ACOSTA BREWER MAY
HOLLAND JUAREZ NEWMAN PEARSON CURTIS CORTEZ DOUGLAS SCHNEIDER JOSEPH BARRETT NAVARRO FIGUEROA KELLER AVILA
WADE MOLINA STANLEY HOPKINS CAMPOS BARNETT BATES CHAMBERS CALDWELL BECK LAMBERT MIRANDA BYRD CRAIG AYALA
LOWE FRAZIER POWERS NEAL LEONARD GREGORY CARRILLO SUTTON FLEMING RHODES SHELTON SCHWARTZ NORRIS JENNINGS
WATTS DURAN WALTERS COHEN MCDANIEL MORAN PARKS STEELE VAUGHN BECKER HOLT DELEON BARKER TERRY HALE LEON
HAIL BENSON HAYNES HORTON MILES LYONS PHAM GRAVES BUSH THORNTON WOLFE WARNER CABRERA MCKINNEY MANN ZIMMERMAN
DAWSON LARA FLETCHER PAGE MCCARTHY LOVE ROBLES CERVANTES SOLIS ERICKSON REEVES CHANG KLEIN SALINAS FUENTES
BALDWIN DANIEL SIMON VELASQUEZ HARDY HIGGINS AGUIRRE LIN CUMMINGS CHANDLER SHARP BARBER BOWEN OCHOA DENNIS
ROBBINS LIU RAMSEY FRANCIS GRIFFITH PAUL BLAIR OCONNOR CARDENAS PACHECO CROSS CALDERON QUINN MOSS SWANSON
CHAN RIVAS KHAN RODGERS SERRANO FITZGERALD ROSALES STEVENSON CHRISTENSEN MANNING GILL CURRY MCLAUGHLIN HARMON
MCGEE GROSS DOYLE GARNER NEWTON BURGESS REESE WALTON BLAKE TRUJILLO ADKINS BRADY GOODMAN ROMAN WEBSTER""".split()
_SYL_A = """BAR BECK BRAN CAR DEL FAR GOLD HAL HOL KAR KEL LAN MAR MOR NOR OST PEL RAD ROS SAL STAN TAR VAN WAL
WIN ZEL TRE BOR GAR LIND BAUM SCHOL KRAM DRE HEN MAL PRO STRO VIL""".split()
_SYL_B = """SKI OWSKI MAN MANN BERG STEIN SON SEN TON LEY WOOD FORD ELLI INI EZ AS OV ICH IAN ER ING HOLM DAHL
RIDGE WICK ETTE ANO ETTI ARD""".split()
_NICK = {
    "ROBERT": ["BOB", "ROB", "BOBBY"], "WILLIAM": ["BILL", "WILL", "BILLY"], "MARGARET": ["PEGGY", "MAGGIE", "MEG"],
    "ELIZABETH": ["LIZ", "BETH", "BETTY"], "RICHARD": ["DICK", "RICK", "RICH"], "JAMES": ["JIM", "JIMMY"],
    "JOHN": ["JACK", "JOHNNY"], "EDWARD": ["ED", "TED", "EDDIE"], "CATHERINE": ["CATHY", "KATE"],
    "KATHERINE": ["KATHY", "KATE", "KATIE"], "MICHAEL": ["MIKE", "MICKEY"], "THOMAS": ["TOM", "TOMMY"],
    "JOSEPH": ["JOE", "JOEY"], "CHARLES": ["CHUCK", "CHARLIE"], "CHRISTOPHER": ["CHRIS"], "DANIEL": ["DAN", "DANNY"],
    "MATTHEW": ["MATT"], "ANTHONY": ["TONY"], "DONALD": ["DON"], "STEVEN": ["STEVE"], "STEPHEN": ["STEVE"],
    "ANDREW": ["ANDY", "DREW"], "KENNETH": ["KEN", "KENNY"], "JOSHUA": ["JOSH"], "GREGORY": ["GREG"],
    "SAMUEL": ["SAM"], "BENJAMIN": ["BEN"], "TIMOTHY": ["TIM"], "JEFFREY": ["JEFF"], "NICHOLAS": ["NICK"],
    "RONALD": ["RON", "RONNIE"], "LAWRENCE": ["LARRY"], "ALEXANDER": ["ALEX"], "PATRICK": ["PAT"],
    "GERALD": ["JERRY"], "ALBERT": ["AL"], "FRANCISCO": ["PACO", "FRANK"], "JOSE": ["PEPE"],
    "PATRICIA": ["PAT", "PATTY", "TRISH"], "JENNIFER": ["JEN", "JENNY"], "BARBARA": ["BARB", "BARBIE"],
    "SUSAN": ["SUE", "SUSIE"], "DEBORAH": ["DEB", "DEBBIE"], "DEBRA": ["DEBBIE"], "REBECCA": ["BECKY"],
    "KIMBERLY": ["KIM"], "CHRISTINE": ["CHRIS"], "CHRISTINA": ["TINA"], "VICTORIA": ["VICKY", "TORI"],
    "JUDITH": ["JUDY"], "DOROTHY": ["DOT", "DOTTIE"], "PAMELA": ["PAM"], "SAMANTHA": ["SAM"],
    "ABIGAIL": ["ABBY"], "FRANCES": ["FRAN"], "THERESA": ["TERRY"], "TERESA": ["TERRY"], "CAROLYN": ["CAROL"],
    "JACQUELINE": ["JACKIE"], "MARILYN": ["LYNN"], "GUADALUPE": ["LUPE"], "DOLORES": ["LOLA"],
    "ALEJANDRO": ["ALEX"], "EDUARDO": ["EDDIE", "LALO"], "MANUEL": ["MANNY"], "ROBERTO": ["BETO"],
    "PHILIP": ["PHIL"], "PHILLIP": ["PHIL"], "EUGENE": ["GENE"], "RAYMOND": ["RAY"], "WALTER": ["WALT"],
    "HAROLD": ["HAL", "HARRY"], "HENRY": ["HANK"], "DOUGLAS": ["DOUG"], "ZACHARY": ["ZACK"],
    "FREDERICK": ["FRED"], "VIRGINIA": ["GINNY"], "MARTHA": ["MARTY"], "ELEANOR": ["ELLIE"], "HELEN": ["NELL"],
}
_VARIANTS = {
    "JOHN": ["JON"], "STEVEN": ["STEPHEN"], "STEPHEN": ["STEVEN"], "KATHERINE": ["CATHERINE", "KATHRYN"],
    "CATHERINE": ["KATHERINE", "CATHRYN"], "KATHRYN": ["KATHERINE"], "SARA": ["SARAH"], "SARAH": ["SARA"],
    "ANN": ["ANNE"], "PHILIP": ["PHILLIP"], "PHILLIP": ["PHILIP"], "JEFFREY": ["GEOFFREY", "JEFFERY"],
    "BRIAN": ["BRYAN"], "BRYAN": ["BRIAN"], "ALAN": ["ALLEN", "ALLAN"], "TERESA": ["THERESA"],
    "THERESA": ["TERESA"], "ERIC": ["ERIK"], "CARL": ["KARL"], "MARK": ["MARC"], "ISABELLA": ["ISABELA"],
    "DEBORAH": ["DEBRA"], "JACQUELINE": ["JACKLYN"], "LEROY": ["LEE ROY"], "LUIS": ["LOUIS"], "LOUIS": ["LUIS"],
}
_TWIN_PAIRS = [("JOHN", "JOAN"), ("DANIEL", "DANIELLE"), ("ERIC", "ERICA"), ("MARIO", "MARIA"),
               ("JULIAN", "JULIA"), ("PAUL", "PAULA"), ("ROBERT", "ROBERTA"), ("GABRIEL", "GABRIELA"),
               ("ADRIAN", "ADRIANA"), ("ALAN", "ALLEN"), ("BRIAN", "RYAN"), ("JASON", "JASMINE"),
               ("MARK", "MARCUS"), ("KAYLA", "KYLE"), ("EMILY", "EMMA"), ("LUIS", "LUCIA"), ("SAMUEL", "SAMANTHA"),
               ("CARLOS", "CARLA"), ("ELLEN", "ELLIS"), ("RONALD", "RONDA")]
_STREETS = """MAIN OAK PINE MAPLE CEDAR ELM WASHINGTON LAKE HILL PARK WALNUT SPRING LINCOLN JACKSON CHURCH
HIGHLAND MILL FRANKLIN WILLOW SUNSET RIVERSIDE MEADOW FOREST JEFFERSON MADISON CHESTNUT HICKORY GARFIELD
BERLIN COTTONWOOD LINFIELD CORDOBA LIMESTONE GARVEY BURLWOOD TARRINGTON GULF POINTE SHOSHONE GENESEE ALAMO
DOTTEREL EISENHOWER CASTLE HOVEDEN WINDBREAKER LEXINGTON CERISE DIMAGGIO CANFORD HARDIES GREENBACK EASTBROOK
MONOGRAM BUENA VISTA ORTEGA SOUTHPARK DAVIS BOWIE ROSEWOOD MAGNOLIA SYCAMORE DOGWOOD JUNIPER ASPEN SEQUOIA
MESQUITE SAGUARO PALOMAR ARROYO ALTA LOMA MIRAMAR CANYON VALLEY RIDGE SUMMIT HARBOR BAYSHORE CORAL PALMETTO
CYPRESS HIBISCUS ORANGE LEMON CITRUS VINEYARD HARVEST PRAIRIE BLUEBONNET LONGHORN PECAN BRAZOS TRINITY
COLORADO SANTA FE CAMINO REAL DEL MAR VENTURA SEPULVEDA FIGUEROA ALVARADO OLYMPIC WILSHIRE MISSION COLLEGE
UNIVERSITY STATION RAILROAD DEPOT MARKET UNION LIBERTY INDEPENDENCE FREEDOM PATRIOT EAGLE FALCON HAWK
ROBIN CARDINAL BLUEBIRD SPARROW HERON PELICAN DOLPHIN MARLIN SHADOW WILLOWBROOK BROOKSIDE CREEKSIDE
FAIRVIEW GREENVIEW GLENWOOD KINGSTON PRINCETON OXFORD CAMBRIDGE STANFORD BERKELEY HAMPTON NEWPORT""".split()
_STYPE = {  # canonical -> written variants (first = USPS abbreviation), incl. the misspellings S8P shows
    "ST": ["ST", "STREET", "STR", "STRT", "ST."], "AVE": ["AVE", "AVENUE", "AV", "AVNUE", "AVN", "AVE."],
    "DR": ["DR", "DRIVE", "DRV", "DRIV"], "RD": ["RD", "ROAD", "RD."], "LN": ["LN", "LANE"],
    "CT": ["CT", "COURT", "CRT"], "BLVD": ["BLVD", "BOULEVARD", "BOULV", "BLV"], "WAY": ["WAY", "WY"],
    "PL": ["PL", "PLACE"], "CIR": ["CIR", "CIRCLE", "CRCL"], "TRL": ["TRL", "TRAIL", "TR"],
    "PKWY": ["PKWY", "PARKWAY", "PKY"], "TER": ["TER", "TERRACE"], "LOOP": ["LOOP", "LP"],
}
_STYPE_KEYS = list(_STYPE)
_STYPE_W = [30, 20, 14, 10, 7, 6, 4, 3, 2, 1, 1, 1, 0.5, 0.5]
_DIRS = {"N": ["N", "NORTH", "N."], "S": ["S", "SOUTH", "S."], "E": ["E", "EAST", "E."], "W": ["W", "WEST", "W."],
         "NW": ["NW", "NORTHWEST"], "SW": ["SW", "SOUTHWEST"], "NE": ["NE"], "SE": ["SE"]}
_DIR_KEYS = list(_DIRS)
_STATES = {  # code -> (full name, other written forms)
    "CA": ("CALIFORNIA", ["CALIF.", "CALIF", "CALI", "CAL"]), "TX": ("TEXAS", ["TEX", "TEX."]),
    "FL": ("FLORIDA", ["FLA", "FLA."]), "AZ": ("ARIZONA", ["ARIZ"]), "NV": ("NEVADA", ["NEV"]),
    "NM": ("NEW MEXICO", ["N MEX", "N.M."]), "AR": ("ARKANSAS", ["ARK"]), "OK": ("OKLAHOMA", ["OKLA"]),
    "GA": ("GEORGIA", ["GA."]), "IL": ("ILLINOIS", ["ILL"]), "NY": ("NEW YORK", ["N.Y."]),
    "WA": ("WASHINGTON", ["WASH"]), "CO": ("COLORADO", ["COLO"]), "OR": ("OREGON", ["ORE"]),
}
_CITIES = [  # (city, state, first zip of its range)
    ("LOS ANGELES", "CA", 90001), ("FRESNO", "CA", 93701), ("SAN DIEGO", "CA", 92101), ("SAN JOSE", "CA", 95110),
    ("SACRAMENTO", "CA", 95811), ("OAKLAND", "CA", 94601), ("ORANGE", "CA", 92865), ("AZUSA", "CA", 91702),
    ("DOWNEY", "CA", 90240), ("SANTA ROSA", "CA", 95401), ("ANTIOCH", "CA", 94509), ("PITTSBURG", "CA", 94565),
    ("SANTA CLARA", "CA", 95050), ("SAN FRANCISCO", "CA", 94110), ("SPRING VALLEY", "CA", 91977),
    ("MONTEREY PARK", "CA", 91754), ("PANORAMA CITY", "CA", 91402), ("LATHROP", "CA", 95330),
    ("HAWTHORNE", "CA", 90250), ("DELANO", "CA", 93215), ("GALT", "CA", 95632), ("SANTEE", "CA", 92071),
    ("PICO RIVERA", "CA", 90660), ("LANCASTER", "CA", 93534), ("BAKERSFIELD", "CA", 93301),
    ("HOUSTON", "TX", 77002), ("DALLAS", "TX", 75201), ("SAN ANTONIO", "TX", 78201), ("AUSTIN", "TX", 78701),
    ("EL PASO", "TX", 79901), ("GRAND PRAIRIE", "TX", 75050), ("ARLINGTON", "TX", 76010), ("KATY", "TX", 77449),
    ("AMARILLO", "TX", 79101), ("BROWNSVILLE", "TX", 78520), ("ROWLETT", "TX", 75088), ("CLEBURNE", "TX", 76031),
    ("LAREDO", "TX", 78040), ("MIAMI", "FL", 33125), ("ORLANDO", "FL", 32801), ("TAMPA", "FL", 33602),
    ("JACKSONVILLE", "FL", 32202), ("DELAND", "FL", 32720), ("DELTONA", "FL", 32725), ("PALM COAST", "FL", 32137),
    ("DELRAY BEACH", "FL", 33444), ("SUNRISE", "FL", 33351), ("MELBOURNE", "FL", 32901), ("PARKLAND", "FL", 33067),
    ("AVENTURA", "FL", 33160), ("LONGWOOD", "FL", 32750), ("PHOENIX", "AZ", 85003), ("TUCSON", "AZ", 85701),
    ("MESA", "AZ", 85201), ("LAS VEGAS", "NV", 89101), ("RENO", "NV", 89501), ("ALBUQUERQUE", "NM", 87101),
    ("SANTA FE", "NM", 87501), ("ROGERS", "AR", 72756), ("LITTLE ROCK", "AR", 72201), ("TULSA", "OK", 74103),
    ("OKLAHOMA CITY", "OK", 73102), ("ATLANTA", "GA", 30303), ("SAVANNAH", "GA", 31401), ("CHICAGO", "IL", 60601),
    ("SPRINGFIELD", "IL", 62701), ("BROOKLYN", "NY", 11201), ("BUFFALO", "NY", 14201), ("SEATTLE", "WA", 98101),
    ("SPOKANE", "WA", 99201), ("DENVER", "CO", 80202), ("AURORA", "CO", 80010), ("PORTLAND", "OR", 97201),
    ("SALEM", "OR", 97301),
]
_CITIES_BY_STATE: dict[str, list[int]] = {}
for _i, _c in enumerate(_CITIES):
    _CITIES_BY_STATE.setdefault(_c[1], []).append(_i)
_AREA = {"CA": [213, 310, 559, 619, 408, 916, 510, 714, 626, 707, 925, 818, 661], "TX": [713, 214, 210, 512, 915,
         972, 817, 281, 806, 956], "FL": [305, 407, 813, 904, 386, 561, 954, 321], "AZ": [602, 520, 480],
         "NV": [702, 775], "NM": [505], "AR": [479, 501], "OK": [918, 405], "GA": [404, 912], "IL": [312, 217],
         "NY": [718, 716], "WA": [206, 509], "CO": [303, 720], "OR": [503, 971]}
_PHONETIC = [("PH", "F"), ("F", "PH"), ("CK", "K"), ("C", "K"), ("K", "C"), ("Y", "I"), ("I", "Y"), ("EI", "IE"),
             ("IE", "EI"), ("LL", "L"), ("TT", "T"), ("NN", "N"), ("SS", "S"), ("SON", "SEN"), ("MAN", "MANN"),
             ("Z", "S"), ("S", "Z"), ("EE", "EA"), ("OU", "OW"), ("TH", "T"), ("V", "B"), ("QU", "KW"), ("X", "KS"),
             ("AY", "AI"), ("ER", "OR"), ("EY", "IE")]

_SIZE_W = [0.20, 0.19, 0.16, 0.13, 0.11, 0.09, 0.07, 0.05]
_SIZE_CUM = [sum(_SIZE_W[: i + 1]) for i in range(len(_SIZE_W))]
_NADDR_CUM = [0.30, 0.55, 0.75, 0.87, 0.95, 1.0]
_SSN_P = 999_999_937  # prime > 10**9 - 64: person index -> distinct 9-digit SSN via an affine map


def _pick_cum(rng: Random, cum: list[float]) -> int:
    """Index drawn from cumulative weights ``cum`` (last value = total)."""
    return min(bisect.bisect_right(cum, rng.random() * cum[-1]), len(cum) - 1)


# --------------------------------------------------------------------------------------------- model

@dataclass
class _Address:
    number: str
    predir: str | None
    street: str
    stype: str
    unit: str | None
    city: str
    state: str
    zip: str
    pobox: tuple[str, str] | None  # (box number, zip)
    landline: str | None = None


@dataclass
class _Person:
    eid: int
    sex: str
    first: str
    middle: str | None
    surname: str
    dob: tuple[int, int, int]
    ssn: str
    suffix: str | None = None
    mobile: str | None = None
    periods: list[tuple[_Address, str]] = field(default_factory=list)  # (address, surname written then)
    surname_mode: str = "plain"  # plain | married | hyphen (alternatives drawn per reference)
    maiden: str | None = None


class _World:
    """All state of one generation run: the random source and the counters."""

    def __init__(self, seed: int):
        self.rng = Random(seed)
        self.next_eid = 1
        self.ssn_a = 1 + self.rng.randrange(_SSN_P - 1)
        self.ssn_b = self.rng.randrange(_SSN_P)

    # ---- identity pieces
    def surname(self) -> str:
        r = self.rng
        u = r.random()
        if u < 0.62:  # Zipf-ish over the common list
            i = int(len(_SURNAMES) * (r.random() ** 1.8))
            return _SURNAMES[i]
        if u < 0.95:
            return r.choice(_SYL_A) + r.choice(_SYL_B)
        return r.choice(_SURNAMES) + "-" + r.choice(_SURNAMES)

    def given(self, sex: str) -> str:
        pool = _MALE if sex == "M" else _FEMALE
        return pool[int(len(pool) * (self.rng.random() ** 1.5))]

    def ssn(self) -> str:
        core = (self.ssn_a * self.next_eid + self.ssn_b) % _SSN_P
        return f"{core % 1_000_000_000:09d}"

    def new_person(self, sex: str, surname: str, birth_year: int, first: str | None = None) -> _Person:
        r = self.rng
        p = _Person(eid=0, sex=sex, first=first or self.given(sex),
                    middle=self.given(sex) if r.random() < 0.7 else None, surname=surname,
                    dob=(birth_year, r.randint(1, 12), r.randint(1, 28)), ssn=self.ssn())
        p.eid = self.next_eid
        self.next_eid += 1
        if birth_year <= 2006 and r.random() < 0.55:
            p.mobile = self.phone(None)
        return p

    def phone(self, state: str | None) -> str:
        r = self.rng
        area = r.choice(_AREA[state]) if state else r.choice(_AREA[r.choice(list(_AREA))])
        return f"{area}{r.randint(200, 999)}{r.randint(0, 9999):04d}"

    # ---- addresses
    def address(self, near: _Address | None = None) -> _Address:
        r = self.rng
        if near is not None and r.random() < 0.7:
            if r.random() < 0.4:
                ci = next(i for i, c in enumerate(_CITIES) if c[0] == near.city and c[1] == near.state)
            else:
                ci = r.choice(_CITIES_BY_STATE[near.state])
        else:
            ci = r.randrange(len(_CITIES))
        city, state, z0 = _CITIES[ci]
        zip_ = f"{z0 + r.randrange(12):05d}"
        num = str(r.choice([r.randint(1, 999), r.randint(100, 9999), r.randint(1000, 29999)]))
        unit = None
        if r.random() < 0.2:
            unit = r.choice([str(r.randint(1, 400)), r.choice("ABCDEN") + str(r.randint(1, 300)),
                             str(r.randint(1, 40)) + r.choice("ABCD")])
        pobox = (str(r.randint(1, 99999)), f"{z0 + r.randrange(12):05d}") if r.random() < 0.25 else None
        return _Address(number=num, predir=r.choice(_DIR_KEYS[:4] * 3 + _DIR_KEYS[4:]) if r.random() < 0.25 else None,
                        street=r.choice(_STREETS), stype=_STYPE_KEYS[_pick_cum(r, _STYPE_CUM)], unit=unit,
                        city=city, state=state, zip=zip_, pobox=pobox,
                        landline=self.phone(state) if r.random() < 0.6 else None)

    def history(self, n: int, start: _Address | None = None) -> list[_Address]:
        out = [start or self.address()]
        while len(out) < n:
            out.append(self.address(out[-1]))
        return out

    def n_addresses(self) -> int:
        return _pick_cum(self.rng, _NADDR_CUM) + 1


_STYPE_CUM = [sum(_STYPE_W[: i + 1]) for i in range(len(_STYPE_W))]


def _household(w: _World) -> tuple[str, list[_Person]]:
    """One household: its kind and its members, each with a periods history."""
    r = w.rng
    u = r.random()
    base_year = r.randint(1935, 1992)
    home = w.history(w.n_addresses())

    def lives(p: _Person, addrs: list[_Address], surname: str | None = None) -> None:
        p.periods.extend((a, surname or p.surname) for a in addrs)

    def children(parent_surname: str, mother_year: int, home_: list[_Address], n: int) -> list[_Person]:
        kids: list[_Person] = []
        twins = n >= 2 and r.random() < 0.3
        year = mother_year + r.randint(20, 30)
        while len(kids) < n:
            year = min(year + r.randint(1, 4), 2016)
            if twins and len(kids) == 0:
                if r.random() < 0.4:
                    a, b = r.choice(_TWIN_PAIRS)
                    if r.random() < 0.5:
                        a, b = b, a
                else:
                    a, b = None, None
                t1 = w.new_person(_sex_of(a) if a else r.choice("MF"), parent_surname, year, a)
                sex2 = _sex_of(b) if b else r.choice("MF")
                t2 = w.new_person(sex2, parent_surname, year, b or _other_name(w, sex2, t1.first))
                t2.dob = t1.dob
                if r.random() < 0.5:  # consecutive SSNs, as twins often get
                    t2.ssn = f"{(int(t1.ssn) + 1) % 1_000_000_000:09d}"
                kids += [t1, t2]
                continue
            sex = r.choice("MF")
            kids.append(w.new_person(sex, parent_surname, year, _other_name(w, sex, *(k.first for k in kids))))
        for k in kids:
            take = home_[r.randrange(len(home_)):]
            lives(k, take)
            if k.dob[0] <= 2005 and r.random() < 0.4:
                lives(k, w.history(r.randint(1, 2), w.address(take[-1]))[0:])
        return kids

    def couple(husband_year: int) -> tuple[_Person, _Person]:
        h = w.new_person("M", w.surname(), husband_year)
        maiden = w.surname()
        wf = w.new_person("F", maiden, husband_year + r.randint(-6, 4))
        wf.maiden = maiden
        lives(h, home)
        if r.random() < 0.6:  # her own addresses before the marriage
            lives(wf, w.history(r.randint(1, 2), w.address(home[0])), maiden)
        x = r.random()
        if x < 0.15:
            lives(wf, home, maiden)  # kept her name
        else:
            wf.surname = h.surname
            wf.surname_mode = "hyphen" if x < 0.15 + 0.85 * 0.25 else "married"
            lives(wf, home, h.surname)
        return h, wf

    if u < 0.34:
        kind = "single"
        p = w.new_person(r.choice("MF"), w.surname(), base_year)
        lives(p, home)
        members = [p]
    elif u < 0.54:
        kind = "couple"
        members = list(couple(base_year))
    elif u < 0.72:
        kind = "family"
        h, wf = couple(min(base_year, 1985))
        members = [h, wf] + children(h.surname, wf.dob[0], home, r.randint(2, 4))
    elif u < 0.76:
        kind = "single_parent"
        p = w.new_person(r.choice("MF"), w.surname(), min(base_year, 1985))
        lives(p, home)
        members = [p] + children(p.surname, p.dob[0], home, r.randint(1, 3))
    elif u < 0.88:
        kind = "roommates"
        members = []
        shared_from = r.randrange(len(home))
        shared = home[shared_from: shared_from + r.randint(1, 2)]
        used: set[str] = set()
        for _ in range(r.randint(2, 3)):
            s = w.surname()
            while s in used:
                s = w.surname()
            used.add(s)
            p = w.new_person(r.choice("MF"), s, r.randint(1960, 2000))
            before = w.history(r.randint(0, 2), w.address(shared[0])) if r.random() < 0.6 else []
            after = w.history(r.randint(1, 2), w.address(shared[-1])) if r.random() < 0.5 else []
            lives(p, before + shared + after)
            members.append(p)
    else:
        kind = "junior_senior"
        sr = w.new_person("M", w.surname(), min(base_year, 1975))
        if sr.middle is None and r.random() < 0.5:
            sr.middle = w.given("M")
        jr = w.new_person("M", sr.surname, min(sr.dob[0] + r.randint(20, 35), 2005), sr.first)
        jr.middle = sr.middle
        jr_sfx = r.random()
        sr.suffix, jr.suffix = (("SR", "JR") if jr_sfx < 0.6 else (None, "JR") if jr_sfx < 0.75
                                else ("JR", "III") if jr_sfx < 0.85 else (None, "II"))
        if r.random() < 0.5:  # SSN 1-2 digits off the father's
            s = list(sr.ssn)
            for i in r.sample(range(9), r.randint(1, 2)):
                s[i] = str((int(s[i]) + r.randint(1, 9)) % 10)
            jr.ssn = "".join(s)
        lives(sr, home)
        k = r.randint(1, min(3, len(home)))
        lives(jr, home[:k])
        if r.random() < 0.7:
            lives(jr, w.history(r.randint(1, 2), w.address(home[k - 1])))
        members = [sr, jr]
        if r.random() < 0.6:
            mo = w.new_person("F", sr.surname, sr.dob[0] + r.randint(-5, 3))
            mo.maiden = w.surname()
            lives(mo, home)
            members.append(mo)
        if r.random() < 0.3:
            members += children(sr.surname, sr.dob[0], home, 1)
    return kind, members


def _sex_of(name: str) -> str:
    return "F" if name in _FEMALE_SET or name in ("JOAN", "DANIELLE", "ERICA", "MARIA", "JULIA", "PAULA", "ROBERTA",
                                                   "GABRIELA", "ADRIANA", "JASMINE", "KAYLA", "CARLA") else "M"


_FEMALE_SET = frozenset(_FEMALE)


def _other_name(w: _World, sex: str, *taken: str) -> str:
    n = w.given(sex)
    while n in taken:
        n = w.given(sex)
    return n


# --------------------------------------------------------------------------------------------- errors

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _typo(r: Random, s: str) -> str:
    """One substitution, insertion, deletion or adjacent transposition (equal weight)."""
    if len(s) < 2:
        return s
    i = r.randrange(len(s))
    op = r.randrange(4)
    if op == 0:
        return s[:i] + r.choice(_LETTERS) + s[i + 1:]
    if op == 1:
        return s[:i] + r.choice(_LETTERS) + s[i:]
    if op == 2 and len(s) > 3:
        return s[:i] + s[i + 1:]
    i = min(i, len(s) - 2)
    return s[:i] + s[i + 1] + s[i] + s[i + 2:]


def _phonetic(r: Random, s: str) -> str:
    """A spelling that sounds alike: one applicable rule of ``_PHONETIC``, else a typo."""
    rules = [(a, b) for a, b in _PHONETIC if a in s[1:]]
    if not rules:
        return _typo(r, s)
    a, b = r.choice(rules)
    starts = [m.start() for m in re.finditer(a, s) if m.start() > 0]
    i = r.choice(starts) if starts else s.index(a)
    return s[:i] + b + s[i + len(a):]


def _digit_error(r: Random, d: str) -> str:
    """Substitute one digit, or transpose two adjacent different digits."""
    pos = [i for i, c in enumerate(d) if c.isdigit()]
    if not pos:
        return d
    if r.random() < 0.5:
        pairs = [i for i in pos if i + 1 < len(d) and d[i + 1].isdigit() and d[i] != d[i + 1]]
        if pairs:
            i = r.choice(pairs)
            return d[:i] + d[i + 1] + d[i] + d[i + 2:]
    i = r.choice(pos)
    return d[:i] + str((int(d[i]) + r.randint(1, 9)) % 10) + d[i + 1:]


# --------------------------------------------------------------------------------------------- rendering

def _given_form(r: Random, first: str) -> str | None:
    u = r.random()
    if u < 0.60:
        return first
    if u < 0.74:
        return r.choice(_NICK[first]) if first in _NICK else first
    if u < 0.84:
        return first[0]
    if u < 0.93:
        return _typo(r, first)
    if u < 0.96:
        return r.choice(_VARIANTS[first]) if first in _VARIANTS else _phonetic(r, first)
    return None


def _surname_form(r: Random, p: _Person, written: str) -> str:
    if p.surname_mode == "hyphen" and p.maiden and written != p.maiden:
        u = r.random()
        written = f"{p.maiden}-{written}" if u < 0.6 else p.maiden if u < 0.7 else written
    elif p.surname_mode == "married" and p.maiden and written != p.maiden and r.random() < 0.1:
        written = f"{p.maiden}-{written}"
    u = r.random()
    if u < 0.09:
        return _typo(r, written)
    if u < 0.14:
        return _phonetic(r, written)
    return written


def _ssn_text(r: Random, ssn: str) -> str:
    u = r.random()
    if u < 0.40:
        s = f"{ssn[:3]}-{ssn[3:5]}-{ssn[5:]}"
    elif u < 0.70:
        s = ssn
    elif u < 0.85:
        s = f"{ssn[:3]} {ssn[3:5]} {ssn[5:]}"
    else:
        s = ssn.lstrip("0") or "0"
    return _digit_error(r, s) if r.random() < 0.10 else s


def _dob_text(r: Random, dob: tuple[int, int, int]) -> str:
    y, m, d = dob
    u = r.random()
    if u < 0.25:
        s = f"{y:04d}{m:02d}{d:02d}"
    elif u < 0.45:
        s = f"{m:02d}/{d:02d}/{y:04d}"
    elif u < 0.60:
        s = f"{m}/{d}/{y % 100:02d}"
    elif u < 0.75:
        s = f"{y:04d}-{m:02d}-{d:02d}"
    else:
        s = f"{y:04d}"
    return _digit_error(r, s) if r.random() < 0.08 else s


def _phone_text(r: Random, ph: str) -> str:
    u = r.random()
    if u < 0.25:
        return f"({ph[:3]}) {ph[3:6]}-{ph[6:]}"
    if u < 0.50:
        return f"{ph[:3]}-{ph[3:6]}-{ph[6:]}"
    if u < 0.70:
        return ph
    if u < 0.85:
        return f"{ph[:3]}.{ph[3:6]}.{ph[6:]}"
    return f"{ph[3:6]}-{ph[6:]}"


def _state_text(r: Random, code: str) -> str:
    u = r.random()
    full, other = _STATES[code]
    if u < 0.60:
        return code
    if u < 0.85:
        return full
    if u < 0.95:
        return r.choice(other)
    return _typo(r, full)


def _street_fields(r: Random, a: _Address) -> list[str]:
    """The street line as word fields: number, direction, street, suffix, unit."""
    num = a.number
    if r.random() < 0.03:
        num = num[: len(num) // 2 + 1] + r.choice(_LETTERS) + num[len(num) // 2 + 1:]
    words = [num]
    if a.predir and r.random() < 0.85:
        words.append(r.choice(_DIRS[a.predir]))
    st = a.street
    if r.random() < 0.10:
        st = _typo(r, st) if r.random() < 0.7 else _phonetic(r, st)
    words.append(st)
    if r.random() < 0.93:
        words.append(r.choice(_STYPE[a.stype]))
    if a.unit and r.random() < 0.8:
        kind = r.choice(["APT", "APT", "UNIT", "#", "STE", "APT#"])
        words += [f"{kind}{a.unit}"] if r.random() < 0.2 and kind != "#" else [kind, a.unit]
    return words


def _case(r: Random, fields: list[str]) -> list[str]:
    u = r.random()
    if u < 0.50:
        return fields
    if u < 0.70:
        return [f.lower() for f in fields]
    if u < 0.85:
        return [f.title() for f in fields]
    return [r.choice((str.upper, str.lower, str.title))(f) for f in fields]


def _render(r: Random, p: _Person, p_ssn: float = 0.50, p_phone: float = 0.35) -> tuple[list[str], frozenset[str]]:
    """One reference of person ``p``: its text fields and the layout kinds it used.

    ``p_ssn`` / ``p_phone``: the probabilities that the reference carries the SSN / a phone (the
    landline of the period's address or the mobile; none when the person has neither). The defaults
    are this generator's; ``messy_longhist.py`` passes its own."""
    addr, surname = r.choice(p.periods)
    kinds: set[str] = set()
    given = _given_form(r, p.first)
    mid = None
    if p.middle:
        u = r.random()
        mid = p.middle[0] if u < 0.45 else p.middle if u < 0.55 else None
    sur = _surname_form(r, p, surname)
    sfx = p.suffix if p.suffix and r.random() < 0.35 else None

    u = r.random()
    if u < 0.25:
        kinds.add("full_name")
        name = [" ".join(x for x in (given, mid, sur, sfx) if x)]
    elif u < 0.80:
        kinds.add("split_name")
        name = [x for x in (given, mid, sur, sfx) if x]
    else:
        kinds.add("last_first")
        rest = " ".join(x for x in (given, mid) if x)
        name = [sur + (f" {sfx}" if sfx else ""), " " + rest] if rest else [sur]

    exploded = r.random() < 0.55
    # address block
    addr_f: list[str] = []
    if r.random() < 0.90:
        sw = _street_fields(r, addr)
        addr_f += sw if exploded else [" ".join(sw)]
    city = addr.city if r.random() > 0.08 else _typo(r, addr.city)
    city_f = (city.split() if exploded else [city]) if r.random() < 0.95 else []
    state_f = [_state_text(r, addr.state)] if r.random() < 0.95 else []
    if exploded and state_f:
        state_f = state_f[0].split()
    zip_ = addr.zip if r.random() > 0.04 else _digit_error(r, addr.zip)
    zip_f = [zip_] if r.random() < 0.93 else []
    gap = [""] if r.random() < 0.5 else []
    addr_f += city_f + gap + state_f + zip_f
    po_f: list[str] = []
    if addr.pobox and r.random() < 0.5:
        box, pz = addr.pobox
        label = r.choice(["PO BOX", "PO BOX", "P.O. BOX", "POST OFFICE BOX", "BOX", "POB", "P O BOX"])
        po_f = (label.split() + [box]) if exploded else [f"{label} {box}"]
        if r.random() < 0.7:
            pc = addr.city.split() if exploded else [addr.city]
            po_f += pc + [""] + [_state_text(r, addr.state)] + [pz]
    ids: list[str] = []
    ssn = _ssn_text(r, p.ssn) if r.random() < p_ssn else None
    dob = _dob_text(r, p.dob) if r.random() < 0.45 else None
    ph = None
    if r.random() < p_phone:
        ph = addr.landline if addr.landline and (r.random() < 0.6 or not p.mobile) else p.mobile
        ph = _phone_text(r, ph) if ph else None
    ids = [x for x in (ssn, dob, ph) if x]

    if r.random() < 0.10:  # sparse: name + exactly one item
        kinds.add("sparse")
        street_item = addr_f[:4] if addr_f else None
        options = [x for x in (street_item, city_f + state_f or None, zip_f or None,
                               [ssn] if ssn else None, [dob] if dob else None, [ph] if ph else None) if x]
        item = r.choice(options) if options else [addr.zip]
        body = name + item
        if exploded and item is street_item:
            kinds.add("exploded")
    elif r.random() < 0.12 and ids:
        kinds.add("ids_first")
        r.shuffle(ids)
        body = ids + name + addr_f + po_f
        if exploded:
            kinds.add("exploded")
    else:
        body = name + addr_f + po_f + ids
        if exploded:
            kinds.add("exploded")
    if r.random() < 0.08 and len(body) >= 2:
        cand = [i for i in range(len(body) - 1) if body[i].strip() and body[i + 1].strip()]
        if cand:
            kinds.add("glued")
            i = r.choice(cand)
            body = body[:i] + [body[i].rstrip() + body[i + 1].strip()] + body[i + 2:]
    if r.random() < 0.15:
        kinds.add("shifted")
        for _ in range(r.randint(1, 3)):
            body.insert(r.randint(1, len(body)), "")
    body = _case(r, body)
    if r.random() < 0.3:
        body += [""] * r.randint(1, 4)  # S8P rows end in runs of empty fields
    return body, frozenset(kinds)


# --------------------------------------------------------------------------------------------- API

def generate(n_references: int, seed: int, with_layout: bool = False) -> Iterator[tuple]:
    """Yield ``n_references`` messy references with their truth, streaming.

    Args:
        n_references: how many references (>= 1).
        seed: the only source of randomness (``random.Random(seed)``).
        with_layout: also yield the frozenset of layout kinds (``LAYOUT_KINDS``) each row used.

    Yields:
        ``(rec_id, fields, entity_id)`` - or ``(rec_id, fields, entity_id, kinds)`` - with ``rec_id``
        ``"M"`` + 7+ digits (unique), ``fields`` the text fields after the id (list[str], no newline
        inside; commas inside a name field are intended and make it two fields once written),
        ``entity_id`` the true person id (decimal string).

    Raises:
        ValueError: ``n_references`` < 1.
    """
    if not isinstance(n_references, int) or n_references < 1:
        raise ValueError(f"n_references must be a positive integer, got {n_references!r}")
    w = _World(seed)
    r = w.rng
    made = 0
    seq = 0
    buf: list[tuple[list[str], int, frozenset[str]]] = []

    def flush():
        nonlocal seq
        r.shuffle(buf)
        for fields, eid, kinds in buf:
            seq += 1
            rid = f"M{seq:07d}"
            yield (rid, fields, str(eid), kinds) if with_layout else (rid, fields, str(eid))
        buf.clear()

    while made < n_references:
        _, members = _household(w)
        for p in members:
            k = _pick_cum(r, _SIZE_CUM) + 1
            for _ in range(k):
                if made >= n_references:
                    break
                fields, kinds = _render(r, p)
                buf.append((fields, p.eid, kinds))
                made += 1
        if len(buf) >= _WINDOW:
            yield from flush()
    yield from flush()


def write_dwm(out: str | Path, truth: str | Path, n_references: int, seed: int) -> dict[str, int]:
    """Write the DWM file ``out`` and its ``RecID,IdTruth`` file ``truth`` (LF endings).

    Returns:
        ``{"references": n, "entities": distinct entity ids}``.

    Raises:
        ValueError: ``n_references`` < 1. OSError: a path cannot be written.
    """
    return write_references(out, truth, generate(n_references, seed))


def write_references(out: str | Path, truth: str | Path, rows, header: str = HEADER) -> dict[str, int]:
    """Write ``rows`` (an iterable of ``(record id, fields, entity id)``, fields a list of strings) as a
    DWM file ``out`` under the line ``header`` and its ``RecID,IdTruth`` file ``truth`` (LF endings); the writer
    of every DWM-layout generator here (``messy.py``, ``messy_faker.py``, ``messy_longhist.py``).

    Returns:
        ``{"references": rows written, "entities": distinct entity ids}``.

    Raises:
        OSError: a path cannot be written; whatever ``rows`` raises.
    """
    entities: set[str] = set()
    n = 0
    with open(out, "w", encoding="utf-8", newline="\n") as fo, open(truth, "w", encoding="utf-8", newline="\n") as ft:
        fo.write(header + "\n")
        ft.write("RecID,IdTruth\n")
        for rid, fields, eid in rows:
            fo.write(rid + "," + ",".join(fields) + "\n")
            ft.write(f"{rid},{eid}\n")
            entities.add(eid)
            n += 1
    return {"references": n, "entities": len(entities)}


# --------------------------------------------------------------------------------------------- statistics

_TOK = re.compile(r"[^0-9A-Za-z]+")
_SSN_RE = re.compile(r"(?<![\d-])\d{3}[- ]?\d{2}[- ]?\d{4}(?![\d-])")
_DATE_RES = [re.compile(p) for p in (
    r"(?<!\d)(19|20)\d\d(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?!\d)",  # YYYYMMDD
    r"(?<!\d)(0?[1-9]|1[0-2])/(0?[1-9]|[12]\d|3[01])/(\d\d|\d{4})(?!\d)",  # MM/DD/YYYY, M/D/YY
    r"(?<!\d)(19|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])(?!\d)",  # YYYY-MM-DD
)]
_SSN8_RE = re.compile(r"(?<![\d-])\d{8}(?![\d-])")
_YEAR_RE = re.compile(r"(19|20)\d\d")
_PHONE_RES = [re.compile(p) for p in (
    r"(?<![\d-])\(?\d{3}\)?[-. ]?\d{3}[-.]\d{4}(?![\d-])",  # 10 digits with separators
    r"(?<![\d-])\d{10}(?![\d-])",  # 10 digits plain
    r"(?<![\d/.-])\d{3}-\d{4}(?![\d-])",  # 7 digits 3-4
)]
_ZIP_RE = re.compile(r"^\d{5}$")


def _is_alpha_field(f: str) -> bool:
    return bool(f) and any(c.isalpha() for c in f) and not any(c.isdigit() for c in f)


def _identifiers(fields: list[str]) -> dict[str, bool]:
    text = ",".join(fields)
    nonempty = [f.strip() for f in fields if f.strip()]
    year_only = False
    for i, f in enumerate(nonempty):  # a lone 4-digit year field not followed by a street word (a house number)
        if _YEAR_RE.fullmatch(f) and 1900 <= int(f) <= 2024:
            nxt = nonempty[i + 1] if i + 1 < len(nonempty) else ""
            if not _is_alpha_field(nxt):
                year_only = True
    toks = [t.upper() for t in _TOK.split(text) if t]
    return {
        "ssn": bool(_SSN_RE.search(text)),
        "ssn8": any(not _DATE_RES[0].fullmatch(m.group()) for m in _SSN8_RE.finditer(text)),
        "dob": year_only or any(p.search(text) for p in _DATE_RES),
        "phone": any(p.search(text) for p in _PHONE_RES),
        "zip": any(_ZIP_RE.match(t) for t in toks),
        "pobox": "BOX" in toks or "POB" in toks or "APTDO" in toks,
    }


def _keys(fields: list[str]) -> list[str]:
    """Household keys of one reference: ``A:<house number>:<zip>`` (the first number directly followed by a
    word token, and the next 5-digit token after it) and ``P:<last 7 phone digits>``."""
    text = ",".join(fields)
    keys = []
    for p in _PHONE_RES:
        for m in p.finditer(text):
            keys.append("P:" + re.sub(r"\D", "", m.group())[-7:])
    for p in (*_PHONE_RES, _SSN_RE, *_DATE_RES):  # identifiers are not house numbers
        text = p.sub(",", text)
    toks = [t.upper() for t in _TOK.split(text) if t]
    for i in range(len(toks) - 1):
        if toks[i].isdigit() and len(toks[i]) <= 6 and toks[i + 1].isalpha():
            z = next((t for t in toks[i + 2:] if len(t) == 5 and t.isdigit()), None)
            if z:
                keys.append(f"A:{toks[i]}:{z}")
            break
    return keys


def _read_dwm_rows(path: str | Path) -> Iterator[tuple[str, list[str]]]:
    with open(path, encoding="utf-8", errors="replace", newline=None) as fh:  # CR, LF and CRLF alike
        lines = (ln.rstrip("\n") for ln in fh)
        header = next((ln for ln in lines if ln.strip()), None)
        if header is None:
            raise ValueError(f"{path}: empty DWM file")
        for n, ln in enumerate(lines, start=2):
            if not ln.strip():
                continue
            rid, _, rest = ln.partition(",")
            if not rid.strip():
                raise ValueError(f"{path}:{n}: line without a RecID")
            yield rid.strip(), rest.split(",")


def _read_truth(path: str | Path) -> dict[str, str]:
    raw = Path(path).read_bytes().decode("utf-8", errors="replace")
    out: dict[str, str] = {}
    for row in csv.reader(raw.replace("\r\n", "\n").replace("\r", "\n").split("\n")):
        if len(row) >= 2 and row[0].strip() and row[0].strip().lower() != "recid":
            out.setdefault(row[0].strip(), row[1].strip())
    return out


def dwm_stats(path: str | Path, truth: str | Path | None = None) -> dict[str, float | int | None]:
    """Difficulty statistics of a DWM file (optionally with its ``RecID,IdTruth`` truth).

    Returns a dict: ``references``; ``entities``, ``refs_per_entity_mean``, ``refs_per_entity_max`` and
    ``household_share`` (None without truth); ``tokens_per_ref_mean`` (tokens = split on non-alphanumerics);
    ``distinct_token_ratio`` (distinct upper-cased tokens / all tokens); ``share_ssn``, ``share_dob``,
    ``share_ssn8`` (8 digits that are not a YYYYMMDD date: S8P's SSNs without their leading zero),
    ``share_phone``, ``share_zip``, ``share_pobox`` (share of references carrying one, by the patterns of
    ``_identifiers``). ``household_share``: share of references whose true entity has a household key
    (``_keys``: house number + zip, or phone) that another entity has too.

    Raises:
        ValueError: empty file or a line without a RecID; ``truth`` given but covering none of the ids.
    """
    n = ntok = 0
    distinct: set[str] = set()
    idc = {k: 0 for k in ("ssn", "ssn8", "dob", "phone", "zip", "pobox")}
    ent_of: dict[str, str] = _read_truth(truth) if truth else {}
    rows_ent: list[str | None] = []
    key_ents: dict[str, set[str]] = {}
    for rid, fields in _read_dwm_rows(path):
        n += 1
        toks = [t.upper() for t in _TOK.split(",".join(fields)) if t]
        ntok += len(toks)
        distinct.update(toks)
        for k, v in _identifiers(fields).items():
            idc[k] += v
        if truth:
            e = ent_of.get(rid)
            rows_ent.append(e)
            if e is not None:
                for k in _keys(fields):
                    key_ents.setdefault(k, set()).add(e)
    out: dict[str, float | int | None] = {
        "references": n, "entities": None, "refs_per_entity_mean": None, "refs_per_entity_max": None,
        "tokens_per_ref_mean": ntok / n if n else 0.0,
        "distinct_token_ratio": len(distinct) / ntok if ntok else 0.0,
        **{f"share_{k}": v / n if n else 0.0 for k, v in idc.items()},
        "household_share": None,
    }
    if truth:
        labelled = [e for e in rows_ent if e is not None]
        if not labelled:
            raise ValueError(f"{truth}: covers none of the record ids of {path}")
        sizes: dict[str, int] = {}
        for e in labelled:
            sizes[e] = sizes.get(e, 0) + 1
        shared = {e for es in key_ents.values() if len(es) > 1 for e in es}
        out.update(entities=len(sizes), refs_per_entity_mean=len(labelled) / len(sizes),
                   refs_per_entity_max=max(sizes.values()),
                   household_share=sum(sizes[e] for e in shared) / len(labelled))
    return out


_ROWS = [("references", "references", "{:,}"), ("entities", "entities", "{:,}"),
         ("refs_per_entity_mean", "references per entity, mean", "{:.2f}"),
         ("refs_per_entity_max", "references per entity, max", "{}"),
         ("tokens_per_ref_mean", "tokens per reference, mean", "{:.1f}"),
         ("distinct_token_ratio", "distinct-token ratio", "{:.3f}"),
         ("share_ssn", "SSN-like (9 digits)", "{:.1%}"),
         ("share_ssn8", "SSN with leading zero dropped (8 digits, not a date)", "{:.1%}"),
         ("share_dob", "DOB-like (date or year)", "{:.1%}"),
         ("share_phone", "phone-like", "{:.1%}"), ("share_zip", "zip-like (5 digits)", "{:.1%}"),
         ("share_pobox", "PO box", "{:.1%}"),
         ("household_share", "household share (entity shares address/phone with another)", "{:.1%}")]


def stats_table(columns: list[tuple[str, dict]]) -> str:
    """Markdown table: one row per statistic, one column per ``(label, dwm_stats(...))``."""
    head = "| statistic | " + " | ".join(lbl for lbl, _ in columns) + " |"
    lines = [head, "|---|" + "---|" * len(columns)]
    for key, label, fmt in _ROWS:
        vals = [("–" if s.get(key) is None else fmt.format(s[key])) for _, s in columns]
        lines.append(f"| {label} | " + " | ".join(vals) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Messy household person references in the DWM layout, with truth.")
    ap.add_argument("--references", type=int, help="how many references to write")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", help="DWM file to write")
    ap.add_argument("--truth", help="RecID,IdTruth file to write")
    ap.add_argument("--stats", action="store_true", help="print the difficulty statistics of the written file")
    ap.add_argument("--stats-only", nargs="+", action="append", metavar="FILE",
                    help="FILE.txt [TRUTH.csv]: print statistics of an existing DWM file (repeatable)")
    a = ap.parse_args(argv)
    try:
        if a.stats_only:
            cols = []
            for spec in a.stats_only:
                if len(spec) > 2:
                    ap.error("--stats-only takes FILE.txt and optionally TRUTH.csv")
                for f in spec:
                    if not Path(f).is_file():
                        raise ValueError(f"{f}: no such file")
                cols.append((Path(spec[0]).name, dwm_stats(spec[0], spec[1] if len(spec) > 1 else None)))
            print(stats_table(cols))
            return 0
        if a.references is None or not a.out or not a.truth:
            ap.error("--references, --out and --truth are required (or use --stats-only)")
        if a.references < 1:
            ap.error("--references must be >= 1")
        info = write_dwm(a.out, a.truth, a.references, a.seed)
        print(f"wrote {info['references']:,} references of {info['entities']:,} entities to {a.out} "
              f"(truth {a.truth})", file=sys.stderr)
        if a.stats:
            print(stats_table([(Path(a.out).name, dwm_stats(a.out, a.truth))]))
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
