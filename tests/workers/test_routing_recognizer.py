"""The routing recogniser on typeset lines in several scripts, with the real Tesseract and its packs.

The house model's side is replayed: `HouseReadings` answers with what the house model reads on
such lines (measured on the multilingual set: Polish without its accents at ~0.97 confidence,
Greek and Cyrillic as Latin-looking nonsense at ~0.3-0.7, a `<unk>` only in its token log), so
each test is about the routing and Tesseract's reading, not the engine. The whole stack, house
model included, is tested end to end in tests/app/test_app_cli_languages.py.
"""
from __future__ import annotations

import math
import shutil

import pytest
from PIL import Image, ImageDraw, ImageFont

from vision.layout import RecognitionTask
from workers.recognizers.base import RecognitionItem, RecognitionOutcome
from workers.recognizers.languages import installed_languages
from workers.recognizers.ppocr import PPOCRLineRecognizer
from workers.recognizers.routing import (UNREADABLE, RoutingRecognizer, _beyond_house, _may_be_other_script,
                                        _spaces_witnessed)

pytestmark = pytest.mark.skipif(shutil.which("tesseract") is None, reason="needs Tesseract (scripts/setup.sh)")
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def _line(text: str, font_file=FONT) -> Image.Image:
    font = ImageFont.truetype(font_file, 30)
    width = int(font.getlength(text)) + 24
    image = Image.new("RGB", (width, 48), "white")
    ImageDraw.Draw(image).text((12, 6), text, fill="black", font=font)
    return image


class HouseReadings:
    """Stands in for the house model: answers each crop with a given (text, confidence, tokens)."""
    name = "house"
    reads_single_lines = True
    softens_noisy_lines = True

    def __init__(self, readings: list[tuple[str, float]] | list[RecognitionOutcome]):
        self.readings = [r if isinstance(r, RecognitionOutcome) else RecognitionOutcome(r[0], confidence=r[1])
                         for r in readings]
        self.calls = 0

    def recognize(self, items):
        self.calls += 1
        assert len(items) == len(self.readings)
        return list(self.readings)

    def check(self):
        pass


def _read(lines: list[str], house: list, languages: str = "detect") -> list[RecognitionOutcome]:
    items = [RecognitionItem(_line(text), RecognitionTask.TEXT, is_single_line=True, languages=languages)
             for text in lines]
    return RoutingRecognizer(HouseReadings(house)).recognize(items)


def _needs(*packs: str) -> None:
    missing = [pack for pack in packs if pack not in installed_languages()]
    if missing:
        pytest.skip(f"needs Tesseract packs {missing} (scripts/setup.sh installs them)")


def test_an_english_page_keeps_the_house_reading():
    lines = ["The pumps at the north station were serviced.", "Two valves of the system were replaced."]
    read = _read(lines, [(line, 0.98) for line in lines])
    assert [o.text for o in read] == lines
    assert {(o.script, o.language) for o in read} == {("Latin", "eng")}


def test_a_polish_page_gets_its_accents_from_the_polish_pack():
    _needs("pol")
    lines = ["Zażółć gęślą jaźń i to jest dla nas", "Wolne i darmowe pakiety są na serwerze",
             "Dzięki temu można działać w domu"]
    house = [("Zazolc gesla jazn i to jest dla nas", 0.97), ("Wolne i darmowe pakiety sa na serwerze", 0.98),
             ("Dzieki temu mozna dzialac w domu", 0.97)]
    read = _read(lines, house)
    assert all(o.language == "pol" and o.script == "Latin" for o in read)
    joined = " ".join(o.text for o in read)
    for word in ("gęślą", "są", "Dzięki", "można", "działać"):
        assert word in joined, joined


@pytest.mark.parametrize("script, pack, lines", [
    ("Greek", "ell", ["Ένα άλλο πρόβλημα που διαπιστώσαμε", "είναι ότι όλοι οι παραπάνω συνδυασμοί",
                      "δυσκολεύει την πληκτρολόγηση"]),
    ("Cyrillic", "rus", ["Съешь же ещё этих мягких булок", "да выпей же чаю и отдохни",
                         "программа для создания пакетов"]),
])
def test_a_page_in_another_script_is_identified_and_read_with_its_pack(script, pack, lines):
    _needs(pack)
    house = [("Entions &ev €X0v apK8T} &v€Xïü n.X.", 0.42), ("oµa µe to betababel package aXX&", 0.33),
             ("nOv 8lantlQTóG@aµE &ival ótl", 0.55)]
    read = _read(lines, house)
    assert [o.script for o in read] == [script] * 3
    assert {o.language for o in read} == {pack}
    words = {word for line in lines for word in line.split()}
    found = {word for o in read for word in o.text.split()}
    assert len(words & found) >= 0.7 * len(words), [o.text for o in read]


def test_named_languages_skip_detection():
    _needs("rus")
    lines = ["Съешь же ещё этих мягких булок"]
    read = _read(lines, [("Cbemb xe ewé", 0.99)], languages="rus")   # confident nonsense: still re-read
    assert read[0].script == "Cyrillic" and read[0].language == "rus"
    assert "мягких" in read[0].text


def test_a_house_unk_is_never_silent():
    """The engine drops `<unk>` from the text; the line says where it was, and that it is unsure."""
    tokens = tuple((char, -0.01) for char in "caf") + (("<unk>", -2.0),) + (("</s>", -0.01),)
    house = [RecognitionOutcome("caf", confidence=0.6, tokens=tokens)]
    read = RoutingRecognizer(HouseReadings(house), tesseract_cmd="/nonexistent/tesseract").recognize(
        [RecognitionItem(_line("café"), RecognitionTask.TEXT, is_single_line=True, languages="detect")])
    assert "<unk>" not in read[0].text and read[0].text == "caf" + UNREADABLE
    assert read[0].confidence is not None and read[0].confidence <= 0.2


def test_a_script_no_pack_reads_is_marked_not_guessed():
    """Hebrew (no `heb` pack installed here): no invented Latin text, a low confidence."""
    if "heb" in installed_languages():
        pytest.skip("the Hebrew pack is installed: Hebrew is readable here")
    lines = ["שלום עולם וכל יושביו", "זהו טקסט בעברית לבדיקה"]
    read = _read(lines, [("nif) ndiy ywr", 0.31), ("ipr3y2 vov1 1n1", 0.28)])
    assert all(o.text == UNREADABLE and o.confidence == 0.0 for o in read), read
    assert not any(math.isnan(o.confidence) for o in read)


def test_a_script_osd_misnames_is_not_read_with_the_wrong_pack():
    """Georgian (no pack; set in FreeSerif): no pack reads the sample, and Tesseract's OSD names it
    Arabic at a script confidence of 0.3. It was then read with the Arabic pack, as Arabic nonsense
    labelled Arabic; now the script is left unnamed and the lines are marked unreadable."""
    if "kat" in installed_languages():
        pytest.skip("the Georgian pack is installed: Georgian is readable here")
    lines = ["საქართველო არის ქვეყანა კავკასიაში", "თბილისი არის საქართველოს დედაქალაქი",
             "ქართული ენა ძალიან ძველია და ლამაზი"]
    items = [RecognitionItem(_line(text, "/usr/share/fonts/truetype/freefont/FreeSerif.ttf"), RecognitionTask.TEXT,
                             is_single_line=True, languages="detect") for text in lines]
    read = RoutingRecognizer(HouseReadings([("Ui3 l6 mxa ntk", 0.3)] * 3)).recognize(items)
    assert all(o.text == UNREADABLE and o.confidence == 0.0 and o.script != "Arabic" for o in read), read


ENGLISH = ["The committee met on Tuesday to review the annual budget",
           "and the plans for the new library building, which opens",
           "in the spring. Members were asked to send their comments",
           "before the end of the month, with the secretary in copy."]


def test_a_line_in_another_script_on_a_latin_page_is_read_in_it():
    """A Russian title and a Greek motto among English lines: the page is Latin, those two lines
    are named by their own script's pack and read with it; the English ones keep their reading,
    one the house model read unsurely included."""
    _needs("rus", "ell")
    lines = ENGLISH[:2] + ["Годовой отчёт о состоянии городской библиотеки"] + ENGLISH[2:3] \
        + ["Μετάφραση του εγγράφου από την επιτροπή"] + ENGLISH[3:]
    house = [(ENGLISH[0], 0.99), (ENGLISH[1], 0.72), ("ToIOBOñ OTUëT O COCTOHHHHH FOpOICKOä óIÓJIOTeKH", 0.73),
             (ENGLISH[2], 0.98), ("MeT&qpøøn TOv &yYpû∞pov anÚ tNv ≤I¹TpOIn", 0.57), (ENGLISH[3], 0.99)]
    read = _read(lines, house)
    assert [o.text for k, o in enumerate(read) if k not in (2, 4)] == ENGLISH
    assert [(o.script, o.language) for o in read] == [("Latin", "eng")] * 2 + [("Cyrillic", "rus")] \
        + [("Latin", "eng")] + [("Greek", "ell")] + [("Latin", "eng")]
    for k in (2, 4):
        words = set(lines[k].split())
        assert len(words & set(read[k].text.split())) >= 0.7 * len(words), read[k].text


def test_a_line_of_chinese_on_a_latin_page_is_read_by_ppocr():
    from workers.recognizers import ppocr
    if ppocr.model_path() is None:
        pytest.skip("needs the rapidocr wheel's PP-OCRv6 model (scripts/setup.sh)")
    lines = ENGLISH[:2] + ENGLISH[3:]
    house = [(line, 0.99) for line in lines]
    items = [RecognitionItem(_line(text), RecognitionTask.TEXT, is_single_line=True, languages="detect")
             for text in lines]
    chinese = _cjk_line("会议记录将在下周发布给所有成员")
    items.insert(2, RecognitionItem(chinese, RecognitionTask.TEXT, is_single_line=True, languages="detect"))
    house.insert(2, ("Gil>l>%rFm}ahfD],a", 0.33))
    read = RoutingRecognizer(HouseReadings(house)).recognize(items)
    assert read[2].script == "Han" and read[2].language == "chi_sim", read[2]
    assert sum(char in read[2].text for char in "会议记录将在下周发布给所有成员") >= 12, read[2].text
    assert [o.text for k, o in enumerate(read) if k != 2] == lines


def test_latin_lines_read_unsurely_stay_the_house_models():
    """English lines read very unsurely (a damaged scan's) are asked about, English reads them
    surely, and they keep their text."""
    lines = ENGLISH
    read = _read(lines, [(line, 0.5) for line in lines])
    assert [o.text for o in read] == lines
    assert {(o.script, o.language) for o in read} == {("Latin", "eng")}


def _cjk_line(text: str) -> Image.Image:
    """A line set in PyMuPDF's own Simplified Chinese font (DejaVu has no Han)."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=40 + 14 * len(text), height=30)
    page.insert_text((10, 21), text, fontname="china-s", fontsize=13)
    pix = page.get_pixmap(dpi=200)
    return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


def test_a_stray_letter_of_the_pages_script_does_not_unseat_a_confident_latin_reading():
    """On a Russian page the Russian pack + English read English lines with a stray Cyrillic
    letter (seen on the multilingual set's maint-guide page); such a reading is not another
    script's, a line with a whole Russian word in it is, and on a Latin page any letter the house
    model cannot write still is (Vietnamese)."""
    assert not _beyond_house("Е ог some types of packages where there are multiple", "Cyrillic")
    assert not _beyond_house("Recommends: 1166а74 (>> 4.0.7)", "Cyrillic")
    assert _beyond_house("вместо ${shlibs:Depends}.", "Cyrillic")
    assert _beyond_house("Пакет не будет установлен", "Cyrillic")
    assert _beyond_house("Sử dụng debhelper", "Latin")
    assert not _beyond_house("For some types of packages", "Cyrillic")


def test_ukrainian_is_told_from_russian_by_the_pack_that_reads_it_best():
    """The Russian pack reads Ukrainian 'і' as '1' and 'ї' as '!'; with the Ukrainian pack
    installed too, a Ukrainian page is read with it, and a Russian page still with Russian's."""
    _needs("rus", "ukr")
    ukrainian = ["Їжак їсть яблука і груші в нашому саду", "Ця програма допомагає створювати пакунки",
                 "Сьогодні гарна погода, і ми йдемо гуляти"]
    russian = ["Съешь же ещё этих мягких булок", "да выпей же чаю и отдохни", "программа для создания пакетов"]
    house = [("Ix<ak icTb a6AyKa i rpywi B HawoMy cagy", 0.41), ("lla nporpama gonomarae ctBopioBatu", 0.38),
             ("Cboroghi rapHa noroga, i mu Vigemo", 0.45)]
    read = _read(ukrainian, house)
    assert {(o.script, o.language) for o in read} == {("Cyrillic", "ukr")}, [o.text for o in read]
    joined = " ".join(o.text for o in read)
    for word in ("Їжак", "їсть", "груші", "допомагає", "створювати"):
        assert word in joined, joined
    assert {o.language for o in _read(russian, house)} == {"rus"}


def test_a_ukrainian_line_on_a_latin_page_is_read_with_the_ukrainian_pack():
    _needs("rus", "ukr")
    lines = ENGLISH[:2] + ["Річний звіт про стан міської бібліотеки їхнього району"] + ENGLISH[2:]
    house = [(ENGLISH[0], 0.99), (ENGLISH[1], 0.95), ("PiuHwñ 3BiT npo cTaH MicbKoï 6i6niotekn ïxHboro", 0.62),
             (ENGLISH[2], 0.98), (ENGLISH[3], 0.99)]
    read = _read(lines, house)
    assert [o.text for k, o in enumerate(read) if k != 2] == ENGLISH
    assert (read[2].script, read[2].language) == ("Cyrillic", "ukr"), read[2].text
    assert {"звіт", "міської", "їхнього"} <= set(read[2].text.split()), read[2].text


def _hangul_line(text: str) -> Image.Image:
    """A line set in PyMuPDF's own Korean font (the wheel carries it; DejaVu has no Hangul)."""
    import io

    import pymupdf

    return _line(text, io.BytesIO(pymupdf.Font("korea").buffer))


KOREAN = ["이 프로그램은 문서를 읽고 텍스트로 바꿉니다", "파일을 열 수 없습니다. 다시 시도하십시오",
          "설정을 저장한 다음 프로그램을 다시 시작하십시오"]


def test_a_korean_page_and_a_korean_line_are_read_with_the_korean_pack():
    """Korean has a pack (set-up installs tesseract-ocr-kor): a page of it is named Hangul and
    read with it, and so is a Korean line among English ones."""
    _needs("kor")
    house = [("0| =22H2 23 2to", 0.31), ("T}0|2 2 4 &ALICH. C}A| AISt", 0.28), ("4/8S AAst CtS I=", 0.3)]
    items = [RecognitionItem(_hangul_line(text), RecognitionTask.TEXT, is_single_line=True) for text in KOREAN]
    read = RoutingRecognizer(HouseReadings(house)).recognize(items)
    assert {(o.script, o.language) for o in read} == {("Hangul", "kor")}, [o.text for o in read]
    joined = " ".join(o.text for o in read)
    for word in ("프로그램은", "문서를", "저장한"):
        assert word in joined, joined
    items = [RecognitionItem(_line(text), RecognitionTask.TEXT, is_single_line=True) for text in ENGLISH[:2]]
    items.insert(1, RecognitionItem(_hangul_line(KOREAN[0]), RecognitionTask.TEXT, is_single_line=True))
    # a line of Hangul comes back from the house model as a few marks, read surely (seen on
    # bench/minority_scripts.py's pages): too few letters to look foreign, too few for its width
    read = RoutingRecognizer(HouseReadings([(ENGLISH[0], 0.99), ("- o t", 0.84), (ENGLISH[1], 0.97)])).recognize(items)
    assert [read[0].text, read[2].text] == ENGLISH[:2]
    assert (read[1].script, read[1].language) == ("Hangul", "kor"), read[1].text
    assert {"프로그램은", "문서를"} <= set(read[1].text.split()), read[1].text


def test_a_reading_far_too_short_for_its_line_is_asked_about():
    """A wide line read as a few marks is asked about however surely it was read; an English
    line read whole is not, nor is a short line read short."""
    wide = _hangul_line(KOREAN[2])
    assert _may_be_other_script(RecognitionOutcome("- o t", confidence=0.84), "eng", wide)
    english = _line(ENGLISH[0])
    assert not _may_be_other_script(RecognitionOutcome(ENGLISH[0], confidence=0.84), "eng", english)
    assert not _may_be_other_script(RecognitionOutcome("12", confidence=0.84), "eng", _line("12"))


def test_a_sure_reading_made_mostly_of_strange_words_is_asked_about():
    """The house model reads some Cyrillic lines as Latin-looking words, surely; most of their
    words are no Latin-script word. A sure line with one such word is not asked about."""
    line = _line("Все равно создать новый? (y/N)")
    assert _may_be_other_script(RecognitionOutcome("Bce paBHO CO3IaTh HOBbIï? (y/N)", confidence=0.914), "eng", line)
    assert _may_be_other_script(RecognitionOutcome("3agBKaTa e OTMeHeHa", confidence=0.946), "eng",
                                _line("Заявката е отменена"))
    english = _line(ENGLISH[0])
    assert not _may_be_other_script(RecognitionOutcome("The committee met on Tuesday with iOS and x86 builds",
                                                       confidence=0.95), "eng", english)


def test_a_line_the_greek_pack_alone_reads_is_greek_though_unsure():
    """The Greek pack is unsure of right readings: this line, set in DejaVu Serif, it reads right at a
    mean word confidence near 57, under the 60 another script's pack needs, while English reads it
    near 33 and the Cyrillic packs under 40. A pack that leads English and every other script's packs
    by 15 names the line from 45 up."""
    from workers.recognizers.languages import SCRIPT_LANGUAGES
    from workers.recognizers.script_id import identify_lines

    _needs("ell", "rus")
    text = "Ο εξυπηρετητής είναι απασχολημένος, δοκιμάστε ξανά"
    installed = installed_languages()
    packs = [code for codes in SCRIPT_LANGUAGES.values() for code in codes if code in installed]
    [named] = identify_lines([_line(text, "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf")], installed, packs)
    assert named.script == "Greek" and named.pack == "ell", named
    assert len(set(text.split()) & set(named.reading.split())) >= 5, named.reading


def test_chinese_lines_that_quote_latin_words_are_read_by_ppocr():
    """Chinese lines quoting a Latin word, as the house model read them on a scan of the minority
    bench (seed 14): a piece the line detector cut off, five characters wide, read very unsurely
    ('if 1 19 =' at 0.48); a line read unsurely as single marks ('k N P E M' at 0.70), which the
    English pack calls Latin (it reads the one Latin word surely); a piece as much Latin as Chinese
    ('__o t a' at 0.66). Each is asked about, PP-OCRv6 reads it, and its reading is taken where it
    is at least half Chinese."""
    from workers.recognizers import ppocr
    if ppocr.model_path() is None:
        pytest.skip("needs the rapidocr wheel's PP-OCRv6 model (scripts/setup.sh)")
    chinese = {2: ("文件至归档", ("if 1 19 =", 0.48)), 4: ("未找到 PEM 加密的私钥", ("k N P E M", 0.70)),
               5: ("追加 tar 文", ("__o t a", 0.66))}
    lines = list(ENGLISH)
    items = [RecognitionItem(_line(text), RecognitionTask.TEXT, is_single_line=True, languages="detect")
             for text in lines]
    house = [(line, 0.99) for line in lines]
    for k, (text, reading) in sorted(chinese.items()):
        items.insert(k, RecognitionItem(_cjk_line(text), RecognitionTask.TEXT, is_single_line=True,
                                        languages="detect"))
        house.insert(k, reading)
    read = RoutingRecognizer(HouseReadings(house)).recognize(items)
    for k, (text, _) in chinese.items():
        assert read[k].script == "Han" and read[k].language == "chi_sim", (text, read[k])
        han = [char for char in text if "\u4e00" <= char <= "\u9fff"]
        assert sum(char in read[k].text for char in han) >= len(han) - 1, read[k].text
    assert [o.text for k, o in enumerate(read) if k not in chinese] == lines


def _typewriter_line(name: str, rest: str, size: int = 22) -> Image.Image:
    """A package name in Liberation Mono, then prose in Liberation Serif, as maint-guide sets them."""
    fonts = [ImageFont.truetype(f"/usr/share/fonts/truetype/liberation/{face}.ttf", size)
             for face in ("LiberationMono-Regular", "LiberationSerif-Regular")]
    width = int(fonts[0].getlength(name) + fonts[1].getlength(rest)) + 2 * size
    image = Image.new("RGB", (width, int(size * 1.6)), "white")
    draw = ImageDraw.Draw(image)
    draw.text((size, size // 4), name, fill="black", font=fonts[0])
    draw.text((size + fonts[0].getlength(name), size // 4), rest, fill="black", font=fonts[1])
    return image


def test_words_in_a_typewriter_face_are_not_broken_where_the_house_model_read_them_whole():
    """PP-OCRv6 reads a French page's lines (it is sure of them), but breaks package names set in a
    typewriter face at a narrow letter's wide cell ('pat ch', 'per l', 'debhe lper'); the house
    model read them whole, so they stay whole. Spaces the house model also has stay."""
    from workers.recognizers import ppocr
    if ppocr.model_path() is None or not ppocr.reads("fra"):
        pytest.skip("needs the rapidocr wheel's PP-OCRv6 model (scripts/setup.sh)")
    lines = [("patch", " — ce programme très utile prend un fichier de différences"),
             ("perl", " — Perl est un des langages de script les plus utilisés"),
             ("debhelper", " — ce paquet fournit des outils pour créer les paquets"),
             ("pbuilder", " — ce paquet permet de construire dans un environnement propre")]
    items = [RecognitionItem(_typewriter_line(name, rest), RecognitionTask.TEXT, is_single_line=True,
                             languages="detect") for name, rest in lines]
    broken = PPOCRLineRecognizer(1).recognize(items)
    assert sum(o.text.split(" —")[0] != name for o, (name, _) in zip(broken, lines)) >= 2, \
        [o.text for o in broken]   # else this test shows nothing
    read = RoutingRecognizer(HouseReadings([(name + rest, 0.97) for name, rest in lines])).recognize(items)
    assert {o.language for o in read} == {"fra"}
    for outcome, (name, rest) in zip(read, lines):
        assert outcome.text.split(" ")[0] == name, outcome.text
        assert len(outcome.text.split()) == len((name + rest).split()), outcome.text


def test_only_pieces_the_witness_read_as_one_word_are_joined():
    assert _spaces_witnessed("pat ch — ce programme", "patch — ce programme") == "patch — ce programme"
    assert _spaces_witnessed("debhe lper(1)) 3 ;", "debhelper(1)) 3 ;") == "debhelper(1)) 3 ;"
    assert _spaces_witnessed("Bui ld-Depends: x", "Build-Depends: x") == "Build-Depends: x"
    # punctuation between the pieces, a piece that is not all letters, a pair the witness has too
    assert _spaces_witnessed("jazyku (např.", "jazyku(např.") == "jazyku (např."
    assert _spaces_witnessed("auf »optional", "auf»optional") == "auf »optional"
    assert _spaces_witnessed("3 in wide", "3in wide") == "3 in wide"
    assert _spaces_witnessed("de la per l de la", "dela perl de la") == "de la perl de la"
    # too short to tell a broken word from two
    assert _spaces_witnessed("a b", "ab") == "a b"


def test_a_page_in_another_script_is_read_a_block_at_a_time_where_its_lines_say_their_block():
    """The pipeline's line crops say their block (`RecognitionItem.block`); Tesseract then reads the
    block whole and each line gets the words inside its box."""
    _needs("rus")
    from workers.recognizers.base import BlockCrop

    lines = ["Съешь же ещё этих мягких булок", "да выпей же чаю и отдохни", "программа для создания пакетов"]
    rows = [_line(text) for text in lines]
    sheet = Image.new("RGB", (max(row.width for row in rows), 56 * len(rows)), "white")
    for k, row in enumerate(rows):
        sheet.paste(row, (0, 56 * k + 4))
    block = BlockCrop(sheet, (0, 0, sheet.width, sheet.height))
    items = [RecognitionItem(row, RecognitionTask.TEXT, is_single_line=True, languages="detect", block=block,
                             box_in_block=(0.0, 56.0 * k + 4, float(row.width), 56.0 * k + 52))
             for k, row in enumerate(rows)]
    house = [("Entions &ev €X0v apK8T} &v€Xïü n.X.", 0.42), ("oµa µe to betababel package aXX&", 0.33),
             ("nOv 8lantlQTóG@aµE &ival ótl", 0.55)]
    read = RoutingRecognizer(HouseReadings(house)).recognize(items)
    assert block._image is not None                       # the block was read
    assert [o.script for o in read] == ["Cyrillic"] * 3
    for outcome, text in zip(read, lines):
        found = set(outcome.text.split())
        assert len(found & set(text.split())) >= 0.7 * len(text.split()), (outcome.text, text)


def _dotted(text: str) -> Image.Image:
    """A line printed in dots, one pixel in three kept each way in 2x2 dots (augraphy's dot-matrix look)."""
    import numpy as np

    grey = np.asarray(_line(text).convert("L")).copy()
    keep = np.zeros(grey.shape, bool)
    for dy in range(2):
        for dx in range(2):
            keep[dy::3, dx::3] = True
    grey[~keep] = 255
    return Image.fromarray(grey).convert("RGB")


def test_a_latin_page_no_pack_reads_surely_keeps_the_house_reading_where_it_holds_a_languages_words():
    """An English page printed in dots: no Tesseract pack reads a sample surely and OSD names no
    script (on the real augraphy page it named Japanese at 0.26), so every line came out unreadable.
    The house model's unsure reading holds English words: the page is Latin and keeps it."""
    house = [("The comittee met on Tuesday to reviev the annual budget", 0.55),
             ("and the plans for the new library bui1ding, which opens", 0.52),
             ("in the spring. Members were asked to send their comnents", 0.58),
             ("before the end of the month, with the secretary in copy.", 0.61)]
    items = [RecognitionItem(_dotted(text), RecognitionTask.TEXT, is_single_line=True, languages="detect")
             for text in ENGLISH]
    read = RoutingRecognizer(HouseReadings(house)).recognize(items)
    assert [o.text for o in read] == [text for text, _ in house]
    assert {o.script for o in read} == {"Latin"}
