"""The data owner's file check: ``dpwitness schema FILE`` says what the reader will do with the file.

Files are written as people produce them: Python's csv module and pandas (CRLF, quoted commas),
an old-Mac export (``\\r`` alone), Latin-1 bytes, hand-edited ragged lines. The report gives
counts and line numbers, never a cell; a header that is data is refused quoting none of it;
query time says nothing of the file's state.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from dpwitness.cli import app
from dpwitness.common.errors import ParameterError
from dpwitness.io.filecheck import check_file
from dpwitness.io.reader import dialect_for, header
from dpwitness.io.schema import ColumnKind, Schema

pytest.importorskip("polars")
runner = CliRunner()
#: Values of the files below that no message may show.
SECRETS = ("Ann", "Bob", "Cid", "Zo", "Jos", "N/A", "unknown", "sexAnn", "Smith")


def _no_value_in(text: str) -> None:
    shown = [value for value in SECRETS if value in text]
    assert not shown, (shown, text)


@pytest.fixture
def crlf(tmp_path: Path) -> Path:
    """Python's csv module: CRLF line ends, a comma inside a quoted field."""
    path = tmp_path / "crlf.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerows([["name", "age", "sex"], ["Smith, Ann", 30, "F"], ["Bob", 40, "M"], ["Cid", 50, "M"]])
    assert b"\r\n" in path.read_bytes() and b'"Smith, Ann"' in path.read_bytes()
    return path


@pytest.fixture
def old_mac(tmp_path: Path) -> Path:
    path = tmp_path / "mac.csv"
    path.write_bytes(b"name,age,sex\rAnn,30,F\rBob,40,M\rCid,50,M\r")
    return path


def test_a_clean_crlf_file_with_quoted_commas_reports_nothing_wrong(crlf: Path) -> None:
    report = check_file(crlf, kinds=Schema.infer(crlf).columns)
    assert report.clean and report.records == 3 and report.columns == ("name", "age", "sex")
    done = runner.invoke(app, ["schema", str(crlf)])
    assert done.exit_code == 0, done.output
    assert "3 records under a header of 3 columns" in done.stderr and "every line well formed" in done.stderr


def test_an_old_mac_file_is_refused_quoting_no_cell(old_mac: Path) -> None:
    with pytest.raises(ParameterError) as caught:
        check_file(old_mac)
    assert caught.value.parameter == "source"
    for argv in (["schema", str(old_mac)], ["query", str(old_mac), "--epsilon", "1", "--histogram", "sex"]):
        done = runner.invoke(app, argv)
        assert done.exit_code == 2, (argv, done.output)
        message = done.stderr.strip()
        assert "\n" not in message and "source" in message and "carriage return" in message
        _no_value_in(message)
        assert "30" not in message and "\r" not in message


def test_a_repeated_value_in_an_old_mac_header_is_not_listed_as_repeated_names(tmp_path: Path) -> None:
    path = tmp_path / "mac2.csv"
    path.write_bytes(b"name,age,sex\rAnn,40,F\rBob,40,M\r")  # "40" twice: the unique-names check would list them all
    with pytest.raises(ParameterError) as caught:
        header(path, dialect_for(path))
    _no_value_in(str(caught.value))
    assert "40" not in str(caught.value)
    done = runner.invoke(app, ["query", str(path), "--epsilon", "1", "--count"])
    assert done.exit_code == 2 and "40" not in done.stderr and "carriage return" in done.stderr


def test_latin1_bytes_are_counted_with_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    frame = pd.DataFrame({"name": ["Zoë", "Ann", "José", "Bob"], "age": [30, 40, 50, 60]})
    frame.to_csv(path, index=False, encoding="latin-1")
    report = check_file(path)
    [found] = [f for f in report.findings if f.kind == "not_utf8"]
    assert found.count == 2 and found.lines == [2, 4]
    done = runner.invoke(app, ["schema", str(path)])
    assert done.exit_code == 0 and "2 lines with bytes that are not UTF-8" in done.stderr and "lines 2, 4" in done.stderr
    _no_value_in(done.stderr)


def test_a_declared_encoding_reads_the_file_as_its_text_and_counts_what_it_cannot_decode(tmp_path: Path) -> None:
    path = tmp_path / "cp1252.csv"
    text = "name,price,note\nJosé,€5,“ok”\nRenée,€6,it’s\n"
    path.write_bytes(text.encode("cp1252") + b"Zo\x81,7,x\n")  # 0x81: no character in cp1252
    undeclared = check_file(path)  # as before: every line with é, € or a smart quote is counted
    [found] = [f for f in undeclared.findings if f.kind == "not_utf8"]
    assert found.count == 3 and found.lines == [2, 3, 4]
    declared = check_file(path, encoding="cp1252")
    [found] = [f for f in declared.findings if f.kind != "type"]
    assert (found.kind, found.count, found.lines) == ("not_decoded", 1, [4])
    done = runner.invoke(app, ["schema", str(path), "--encoding", "cp1252", "--categories", "5"])
    assert done.exit_code == 0 and 'encoding = "cp1252"' in done.stdout and '"€5"' in done.stdout
    assert "1 line with bytes that are not cp1252 (read as U+FFFD) (line 4)" in done.stderr
    latin1 = tmp_path / "latin1.csv"
    latin1.write_bytes("name,age\nJosé,30\nRenée,40\n".encode("latin-1"))
    assert check_file(latin1, encoding="latin-1").clean
    schema = tmp_path / "latin1.schema.toml"
    schema.write_text('schema_version = 1\nencoding = "latin-1"\n[columns.name]\ntype = "string"\n', encoding="utf-8")
    done = runner.invoke(app, ["schema", str(latin1), "--against", str(schema)])  # the schema's encoding applies
    assert done.exit_code == 0 and "every line well formed" in done.stderr


def test_ragged_malformed_empty_and_bare_return_lines_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "edited.csv"
    path.write_bytes(
        b"name,age,sex\r\n"  # 1
        b"Ann,30,F\r\n"  # 2
        b'"Smith, Jo",41,F\r\n'  # 3: quoted comma, fine
        b"Bob,40\r\n"  # 4: short
        b"\r\n"  # 5: empty
        b"Cid,50,M,extra\r\n"  # 6: long
        b'"Dee,22,F\r\n'  # 7: unclosed quote
        b"Eve,33,F\rFay,44,M\r\n"  # 8: two records joined by a bare \r
        b"Gus,55,M"  # 9: no final line end
    )
    report = check_file(path)
    found = {f.kind: (f.count, f.lines) for f in report.findings}
    assert report.records == 8
    # line 8 is also long: its bare \r joins two records into one line of 5 fields
    assert found == {"short": (1, [4]), "empty": (1, [5]), "long": (2, [6, 8]), "malformed": (1, [7]), "bare_cr": (1, [8])}
    payload = report.to_dict()
    assert {f["kind"] for f in payload["findings"]} == set(found)
    done = runner.invoke(app, ["schema", str(path)])
    assert done.exit_code == 0, done.output
    for phrase in ("fewer than the header's 3 fields (the missing cells are null) (line 4)", "malformed line", "bare \\r"):
        assert phrase in done.stderr
    _no_value_in(done.stderr)


def test_cells_that_do_not_fit_the_type_are_counted_per_column(tmp_path: Path) -> None:
    path = tmp_path / "ages.csv"
    path.write_text("name,age\nAnn,30\nBob,N/A\nCid,41\nDee,unknown\nEve,52\nFay,60\n", encoding="utf-8")
    inferred = Schema.infer(path)
    assert inferred.columns["age"] is ColumnKind.STRING  # two words turn a numeric column into text
    [found] = check_file(path, kinds=inferred.columns).findings
    assert (found.column, found.count, found.lines) == ("age", 2, [3, 5])
    declared = tmp_path / "ages.schema.toml"
    declared.write_text(Schema({"name": ColumnKind.STRING, "age": ColumnKind.INTEGER}, declared=True).to_toml())
    checked = runner.invoke(app, ["schema", str(path), "--against", str(declared)])
    assert checked.exit_code == 0, checked.output
    assert "column 'age': 2 cells that do not parse as integer" in checked.stderr and "lines 3, 5" in checked.stderr
    assert checked.stdout == ""  # the check only: no TOML
    _no_value_in(checked.stderr + checked.stdout)
    assert check_file(path, kinds={"name": ColumnKind.STRING}).clean  # a text column of words is not flagged


def test_query_time_says_nothing_of_the_files_state(tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    path.write_bytes(b'name,age\r\nAnn,30\r\nBob\r\n\r\nCid,50,extra\r\n"Dee,1\r\nZo\xe9,33\r\n')
    done = runner.invoke(app, ["query", str(path), "--epsilon", "1", "--count", "--seed", "1", "--json"])
    assert done.exit_code == 0, done.output
    text = done.stdout + done.stderr
    for word in ("ragged", "malformed", "UTF-8", "fewer", "line 3", "empty line"):
        assert word not in text
    assert json.loads(done.stdout)["releases"]
