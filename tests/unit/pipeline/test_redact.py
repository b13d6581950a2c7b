"""No path of the build machine in what the pipeline renders or the repository holds (issue 41
item 5): the sanitiser of executed notebooks (networkedfl.io._redact), and a scan of the
committed files. The paths below are built at run time, never spelled: the repository scan
would find them here too."""

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from networkedfl.io import path_replacements, redact_notebook, redact_paths

REPO = Path(__file__).resolve().parents[3]
BUILDER = os.sep + os.path.join("work", "build", "repo")  # a checkout on some builder's disk
VENV = os.path.join(BUILDER, ".venv")
#: An absolute path into a user's or a scratch directory of the machine that wrote the file
#: (the directories' bare names, as in this sentence, are no path of a machine).
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:root|home|work|tmp|Users|opt|mnt|srv|scratch)/[^\s/`'\"]")


def test_the_checkout_becomes_dot_and_a_venv_inside_it_venv():
    table = {BUILDER: ".", VENV: "<venv>"}
    text = (f'table = "{BUILDER}/results/tables/t.csv"\n'
            f"{VENV}/lib/python3.11/site-packages/x.py:12: UserWarning: late\n"
            f"cd {BUILDER}")
    assert redact_paths(text, replacements=table) == (
        'table = "./results/tables/t.csv"\n<venv>/lib/python3.11/site-packages/x.py:12: UserWarning: late\ncd .')


@pytest.mark.parametrize("text", [f"{BUILDER}2/results", f"x{BUILDER}/results", f"{BUILDER}.old/a", f"a-{BUILDER}"])
def test_a_longer_name_or_a_relative_path_ending_the_same_is_left_alone(text):
    assert redact_paths(text, replacements={BUILDER: "."}) == text


def test_this_machines_venv_temporary_directory_and_home_are_replaced(tmp_path):
    """The defaults: the roots given, then sys.prefix (in a venv), the temporary directory and
    the home; the longest first, so the root under the temporary directory becomes "."."""
    root = tmp_path / "checkout"
    home, scratch = Path.home(), tempfile.gettempdir()
    text = f"{root}/results/a.csv {scratch}/b {home}/.cache/c {sys.prefix}/lib/d.py"
    redacted = redact_paths(text, roots=[root])
    assert redacted.split()[:3] == ["./results/a.csv", "<tmp>/b", "~/.cache/c"]
    if sys.prefix != sys.base_prefix:
        assert redacted.split()[3] == "<venv>/lib/d.py"
    for prefix in (str(root), scratch, str(home)):
        assert prefix not in redacted
    assert os.path.realpath(root) in path_replacements([root])


def test_every_text_of_a_notebook_is_redacted_and_its_images_are_not():
    png = "iVBORw0KGgo" + BUILDER  # "/" is a base64 digit: image data is never touched
    notebook = nbformat.v4.new_notebook(metadata={"papermill": {"parameters": {"table": f"{BUILDER}/t.csv"}}})
    code = nbformat.v4.new_code_cell(f'table = "{BUILDER}/t.csv"', outputs=[
        nbformat.v4.new_output("stream", name="stderr", text=f"{VENV}/lib/m.py:3: Warning: w\n"),
        nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": [f"<{BUILDER}/f.png>"]}),
    ])
    notebook.cells.append(code)
    redacted = redact_notebook(notebook, replacements={BUILDER: ".", VENV: "<venv>"})
    assert redacted is notebook
    nbformat.validate(redacted)
    assert code.source == 'table = "./t.csv"' and code.outputs[0].text == "<venv>/lib/m.py:3: Warning: w\n"
    assert code.outputs[1].data == {"image/png": png, "text/plain": ["<./f.png>"]}
    assert notebook.metadata.papermill.parameters.table == "./t.csv"


def _committed_text_files():
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    for name in filter(None, listed.decode().split("\0")):
        path = REPO / name
        if name.startswith("tests/") or not path.is_file():  # tests build scratch paths on purpose
            continue
        data = path.read_bytes()
        if b"\0" not in data[:8192]:
            yield name, data.decode("utf-8", errors="replace")


def test_no_committed_file_names_a_path_of_the_machine_that_wrote_it():
    """The gallery's notebooks, benchmarks/README.md, the docs, the package, constraints.txt: no
    /root, /home, /work, /tmp, /Users, /opt, /mnt, /srv or /scratch path (docs need none of them
    as an example; a build machine's wheel directory, /opt/..., is no install instruction)."""
    found = [f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {text[m.start():].split(chr(10), 1)[0][:60]!r}"
             for name, text in _committed_text_files() for m in MACHINE_PATH.finditer(text)]
    assert not found, f"{len(found)} absolute paths (relative to the checkout instead):\n" + "\n".join(found[:20])
