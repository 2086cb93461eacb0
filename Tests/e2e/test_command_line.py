"""The command line's one description (Sources/SluiceCLI, CommandSpec) and what is made from it:
`--help`, the man page (sluice.1, checked in), the bash, zsh and fish completions. Each is read
from the binary and checked against the others and against what the parser accepts."""

import os
import re
import shutil
import subprocess

import pytest

from conftest import REPO, run, sluice_bin

MAN_PAGE = os.path.join(REPO, "sluice.1")
OPERANDS = ["a", "b", "c", "d"]   # more than any command takes: a usage error once the options are read


def text_of(*args):
    status, out, err = run(*args)
    assert status == 0, (args, err)
    return out.decode()


def unroff(text):
    return text.replace("\\-", "-").replace("\\&", "").replace("\\e", "\\")


class Form:
    """One `.SS` section of the man page: a command's path, its selector, its options."""

    def __init__(self, title):
        words = unroff(title).split()[1:]
        self.selector = words.pop() if words and words[-1].startswith("-") else None
        self.path = words
        self.options = []   # (names, takes a value)
        self.choices = {}   # name -> the values `a|b|c` offers


def man_forms():
    """The man page's sections, as the binary writes it."""
    forms, form, tagged = [], None, False
    for line in text_of("help", "--man").splitlines():
        if line.startswith(".SH "):
            form = None  # EXIT STATUS, ENVIRONMENT, FILES, EXAMPLES: not a command's options
        elif line.startswith(".SS "):
            form = Form(line[4:].strip('"'))
            forms.append(form)
        elif line == ".TP":
            tagged = True
            continue
        elif tagged and form is not None and line.startswith("\\fB"):
            names = [unroff(n) for n in re.findall(r"\\fB(.*?)\\fR", line)]
            value = re.search(r"\\fI(.*?)\\fR", line)
            if names != ["--"]:
                form.options.append((names, value is not None))
                if value and "|" in unroff(value.group(1)):
                    for name in names:
                        form.choices[name] = unroff(value.group(1)).split("|")
        tagged = False
    return forms


FORMS = man_forms()
PATHS = []
for _form in FORMS:
    if _form.path not in PATHS:
        PATHS.append(_form.path)
# The root is sluice itself: its options are in the page's OPTIONS section, not a .SS.
ROOT_OPTIONS = {"-V", "--version", "-h", "--help"}


def names_at(path):
    """Every option any form at `path` takes, per the man page."""
    if not path:
        return set(ROOT_OPTIONS)
    return {name for form in FORMS if form.path == path for names, _ in form.options for name in names}


def subcommands_at(path):
    return {form.path[len(path)] for form in FORMS if len(form.path) == len(path) + 1 and form.path[:len(path)] == path}


def help_options(text):
    """The option names `--help` lists: rows that start with a dash, `--` left out."""
    names = set()
    for line in text.splitlines():
        match = re.match(r"^  (-[^\s,]*(?:, -[^\s,]*)*)", line)
        if match:
            names.update(n for n in match.group(1).split(", ") if n != "--")
    return names


def test_the_checked_in_man_page_is_the_binarys():
    with open(MAN_PAGE) as page:
        checked_in = page.read()
    assert checked_in == text_of("help", "--man"), \
        "sluice.1 differs from `sluice help --man`: run `$(swift build --show-bin-path)/sluice help --man > sluice.1`"


def test_the_man_page_renders_without_a_warning():
    assert shutil.which("man") and shutil.which("groff"), "man-db and groff-base (scripts/peers.sh installs them)"
    rendered = subprocess.run(["man", "-l", MAN_PAGE], capture_output=True, text=True,
                              env=dict(os.environ, MANWIDTH="100", MANPAGER="cat", PAGER="cat"))
    assert rendered.returncode == 0 and rendered.stderr == "", rendered.stderr
    for form in FORMS:
        assert " ".join(["sluice"] + form.path) in rendered.stdout
    checked = subprocess.run(["groff", "-man", "-ww", "-z", MAN_PAGE], capture_output=True, text=True)
    assert checked.returncode == 0 and checked.stderr == "", checked.stderr


def test_every_command_is_in_the_man_page():
    # Every command `sluice --help` lists has a section, and the page has no other.
    listed = {tuple(line.split()[:1]) for line in text_of("--help").splitlines()
              if line.startswith("  ") and not line.startswith("   ") and not line.startswith("  -")}
    assert {tuple(form.path[:1]) for form in FORMS} == listed
    assert ["s3", "cp"] in PATHS and ["upload"] in PATHS and len(FORMS) >= 14


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "sluice")
def test_help_and_the_man_page_list_the_same_options(path):
    assert help_options(text_of(*path, "--help")) == names_at(path)
    assert help_options(text_of("help", *path)) == names_at(path)


def test_sluice_itself_takes_its_options_and_no_other():
    assert text_of("--help").startswith("usage: sluice")
    assert text_of("-h") == text_of("--help")
    assert text_of("-V").startswith("sluice ") and text_of("--version") == text_of("-V")
    assert help_options(text_of("--help")) == ROOT_OPTIONS
    status, _, err = run("--method", "x")
    assert status == 2 and "unknown option '--method'" in err, err


@pytest.mark.parametrize("form", FORMS, ids=lambda f: " ".join(f.path + [f.selector or ""]).strip())
def test_the_parser_accepts_exactly_the_options_listed(form):
    own = {name for names, _ in form.options for name in names}
    prefix = list(form.path)
    if form.selector:
        takes_value = {name: value for names, value in form.options for name in names}
        prefix += [form.selector] + (["1"] if takes_value[form.selector] else [])
    for names, takes_value in form.options:
        for name in names:
            if name in ("-h", "--help"):
                status, out, _ = run(*form.path, name)
                assert status == 0 and out.decode().startswith("usage: sluice " + " ".join(form.path)), name
                continue
            if name == form.selector:
                continue
            args = prefix + [name] + (["1"] if takes_value else []) + OPERANDS
            status, out, err = run(*args)
            assert status == 2 and out == b"", (args, status, err)
            for refusal in ("unknown option", "not handled", "needs a value", "takes no value"):
                assert refusal not in err, (args, err)
    # Whatever another command takes and this one does not is refused by name; the options that
    # select another form of this command (upload --parts) are not refused, they select it.
    selectors = {other.selector for other in FORMS if other.path == form.path}
    others = {name for other in FORMS for names, _ in other.options for name in names} - own - selectors
    for name in sorted(others):
        args = prefix + [name, "1"] + OPERANDS
        status, out, err = run(*args)
        # A group (s3) takes a subcommand first: an option there is an unknown subcommand.
        refusal = ("unknown s3 subcommand '%s'" if subcommands_at(form.path) else "unknown option %s") % name
        assert status == 2 and refusal in err, (args, err)


def bash_completion(script, words):
    program = 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _sluice; printf "%s\\n" "${COMPREPLY[@]}"'
    out = subprocess.run(["bash", "-c", program, "bash", script, *words], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    return [line for line in out.stdout.splitlines() if line]


# zsh's completion system runs only in an interactive shell's line editor: an interactive zsh
# under zpty (zsh's own pseudo-terminal module) loads compinit and the script and is sent the
# words and a TAB. Nothing more is sent until the list is on the screen (the line drawn again
# after it): with input pending, the line editor may skip drawing the list. Then the line is
# cleared (^U) and DONE42 printed (never typed as such) to mark the end.
# The pty is made 500 rows tall and no list-prompt style is set: a list taller than the screen
# (s3 cp offers about 50 options) would otherwise stop at zsh's pager prompt and never end.
ZSH_DRIVER = r"""
zmodload zsh/zpty
zpty -b z 'zsh -f -i'
zpty -w z "PS1='> '; autoload -Uz compinit; compinit -u -D; source ${(q)1}"
zpty -w z 'zstyle ":completion:*" menu no; LISTMAX=100000; stty rows 500 columns 200; unsetopt beep listambiguous; print READ$((6*7))'
zpty -r -m z ready '*READ42*'
zpty -n -w z "$2"$'\t'
typed=${2% }
zpty -r -m z listed "*${(b)typed}*${(b)typed}*"
zpty -n -w z $'\x15print DONE$((6*7))\n'
zpty -r -m z rest '*DONE42*'
print -r -- "$listed$rest"
zpty -d z
"""


def zsh_completion(script, words):
    line = " ".join(words)
    out = subprocess.run(["zsh", "-f", "-c", ZSH_DRIVER, "zsh", script, line], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    screen = re.sub(r"\x1b\[[0-9]*C", " ", out.stdout)   # cursor right: a gap
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)
    screen = re.sub(r".\x08", "", screen).replace("\r", "")
    screen = screen[screen.index("> " + line) + len("> " + line):screen.rindex("print DONE")]
    # What is left: the list, the line drawn again, with the list's common prefix when zsh
    # inserted one ("p" for parts.json and plan.json).
    tokens = [token for token in screen.split() if token not in words]
    return [token for token in tokens if len(set(tokens)) == 1 or token != os.path.commonprefix(tokens)]


def fish_completion(script, words):
    line = " ".join(words)
    out = subprocess.run(["fish", "--no-config", "-c", 'source $argv[1]; complete -C $argv[2]', script, line],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    return [entry.split("\t")[0] for entry in out.stdout.splitlines() if entry]


SHELLS = {"bash": bash_completion, "zsh": zsh_completion, "fish": fish_completion}


@pytest.fixture(scope="module", params=sorted(SHELLS))
def completion(request, tmp_path_factory):
    shell = request.param
    assert shutil.which(shell), "%s is not installed (scripts/peers.sh installs it)" % shell
    script = tmp_path_factory.mktemp("completions") / ("sluice." + shell)
    script.write_text(text_of("completions", shell))
    complete = SHELLS[shell]
    return lambda words: complete(str(script), ["sluice"] + words)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "sluice")
def test_completions_offer_every_option_of_every_command(completion, path):
    offered = set(completion(path + ["-"]))
    assert offered == names_at(path), (sorted(offered), sorted(names_at(path)))
    if subcommands_at(path):
        assert set(completion(path + [""])) == subcommands_at(path)


@pytest.mark.parametrize("form", [f for f in FORMS if f.choices], ids=lambda f: " ".join(f.path + [f.selector or ""]).strip())
def test_completions_offer_an_options_values(completion, form):
    for name, choices in form.choices.items():
        assert set(completion(form.path + [name, ""])) == set(choices), name


def test_completions_of_a_path_option_offer_files(completion, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plan.json").write_text("{}")
    (tmp_path / "parts.json").write_text("{}")
    assert sorted(set(completion(["upload", "--parts", ""]))) == ["parts.json", "plan.json"]


def test_an_unknown_shell_is_a_usage_error():
    status, out, err = run("completions", "tcsh")
    assert status == 2 and out == b"" and "bash, zsh or fish" in err, err
