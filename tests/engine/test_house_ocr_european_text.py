"""The fifth fine-tuning phase's European text: translated messages from gettext catalogues,
split by catalogue into training and held-out sides, in the model's alphabet only; and the
repeated runs mixed in with them."""
from __future__ import annotations

import struct

from training.house_ocr import corpus
from training.house_ocr.charset import CHARACTERS


def write_mo(path, messages: dict[str, str]) -> None:
    """A GNU gettext catalogue (.mo), little-endian, without a hash table."""
    pairs = sorted({"": "Content-Type: text/plain; charset=UTF-8\n", **messages}.items())
    ids = [key.encode() for key, _ in pairs]
    strs = [value.encode() for _, value in pairs]
    header = 7 * 4
    ids_table, strs_table = header, header + 8 * len(pairs)
    data_start = strs_table + 8 * len(pairs)
    offsets, blob = [], b""
    for chunk in ids + strs:
        offsets.append((len(chunk), data_start + len(blob)))
        blob += chunk + b"\0"
    out = struct.pack("<7I", 0x950412DE, 0, len(pairs), ids_table, strs_table, 0, 0)
    out += b"".join(struct.pack("<2I", *entry) for entry in offsets)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(out + blob)


def _catalogue_for(held_out: bool) -> str:
    return next(name for name in (f"program{k}" for k in range(100)) if corpus._held_out_catalogue(name) == held_out)


def test_messages_split_by_catalogue_and_kept_in_the_alphabet(tmp_path):
    training, held_out = _catalogue_for(False), _catalogue_for(True)
    write_mo(tmp_path / "fr" / "LC_MESSAGES" / f"{training}.mo",
             {"File not found": "Fichier introuvable : « %s »", "Open": "Ouvrir",
              "Cannot read the file": "Impossible de lire le fichier",
              "Polish": "Nie można otworzyć pliku teraz"})   # ż, ć: outside Latin-1, the model cannot spell them
    write_mo(tmp_path / "de" / "LC_MESSAGES" / f"{held_out}.mo", {"Save all files": "Alle Dateien speichern"})
    write_mo(tmp_path / "de" / "LC_MESSAGES" / "octave.mo", {"Plot the data": "Die Daten grafisch darstellen"})
    write_mo(tmp_path / "ru" / "LC_MESSAGES" / f"{training}.mo", {"Open the file": "Открыть этот файл"})

    train_side = corpus.european_prose(False, tmp_path)
    held_side = corpus.european_prose(True, tmp_path)
    assert set(train_side) == {"Fichier introuvable : « %s »", "Impossible de lire le fichier"}
    assert held_side == ("Alle Dateien speichern",)
    assert all(char in CHARACTERS for line in train_side + held_side for char in line)


def test_european_lines_are_deterministic_and_spelled_in_the_alphabet():
    first, second = corpus.TrainingText(7), corpus.TrainingText(7)
    lines = [first.european_line() for _ in range(40)]
    assert lines == [second.european_line() for _ in range(40)]
    assert all(line and all(char in CHARACTERS for char in line) for line in lines)
    assert any(any(char in "àâçéèêëîïôûùüÿæœäöüßåøáíóúñ" for char in line.lower()) for line in lines)


def test_repeat_lines_hold_long_runs_in_the_alphabet():
    """`make_data --repeats`: what keeps a fine-tuned model reading forty zeros as forty zeros."""
    import re

    first, second = corpus.TrainingText(11), corpus.TrainingText(11)
    lines = [first.repeat_line() for _ in range(200)]
    assert lines == [second.repeat_line() for _ in range(200)]
    assert all(line and all(char in CHARACTERS for char in line) for line in lines)
    runs = [max(len(m.group(0)) for m in re.finditer(r"(.)\1*", line)) for line in lines]
    assert sum(run >= 20 for run in runs) >= 40                 # long runs of one character
    assert any(re.fullmatch(r"0{5,}[0-9]+", line) for line in lines)   # zero-padded numbers
    assert not any(set(line) <= set("lI|oO") for line in lines)  # runs fonts draw alike are left out
