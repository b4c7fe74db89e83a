"""`cairn completion bash|zsh|fish`: shell completion, answered by Cairn itself (issue 17).

The script each shell sources asks `cairn __complete -- WORDS…` (the words typed after `cairn`, the
last one being completed, possibly empty) and gets one candidate per line, `value<TAB>description`:
verbs, a verb's options, an option's choices, and, where a node id is expected, the ids of the most
recently changed nodes (of the `--db` typed on the line, else the default database) with their
titles. A line `__files__` asks the shell for its own file completion (`--db`, a folder to import).
The parser itself is read, so a new verb or option completes without a change here.
"""

from __future__ import annotations

import argparse
import sys

from tui.cli.common import Out, Verbs, id_arg, path_arg

SHELLS = ("bash", "zsh", "fish")
FILES = "__files__"
MAX_IDS = 200

BASH = r"""# cairn completion for bash: eval "$(cairn completion bash)" in ~/.bashrc
_cairn() {
    local IFS=$'\n' cur="${COMP_WORDS[COMP_CWORD]}" out
    out=$(command cairn __complete -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return
    if [[ "$out" == "__files__" ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
        return
    fi
    local -a lines=($out)
    if (( ${#lines[@]} == 1 )); then
        COMPREPLY=("${lines[0]%%$'\t'*}")
    else
        # Several: shown as "value  description"; bash inserts only what they share.
        COMPREPLY=($(printf '%s\n' "${lines[@]}" | sed $'s/\t/  /'))
    fi
}
complete -o default -F _cairn cairn
"""

ZSH = r"""#compdef cairn
# cairn completion for zsh: eval "$(cairn completion zsh)" in ~/.zshrc (after compinit)
_cairn() {
    local out
    out=$(command cairn __complete -- "${words[@]:1:$((CURRENT-1))}" 2>/dev/null) || return
    if [[ "$out" == "__files__" ]]; then
        _files
        return
    fi
    local -a candidates
    local line
    for line in "${(@f)out}"; do
        candidates+=("${${line%%$'\t'*}//:/\\:}:${line#*$'\t'}")
    done
    _describe 'cairn' candidates
}
compdef _cairn cairn
"""

FISH = r"""# cairn completion for fish: cairn completion fish > ~/.config/fish/completions/cairn.fish
function __cairn_complete
    set -l words (commandline -opc) (commandline -ct)
    set -l out (command cairn __complete -- $words[2..-1] 2>/dev/null)
    if test "$out" = "__files__"
        __fish_complete_path (commandline -ct)
    else
        printf '%s\n' $out
    end
end
complete -c cairn -f -a '(__cairn_complete)'
"""

SCRIPTS = {"bash": BASH, "zsh": ZSH, "fish": FISH}


def cmd_completion(args, out: Out) -> int:
    sys.stdout.write(SCRIPTS[args.shell])
    return 0


def cmd_complete(args, out: Out) -> int:
    words = list(args.words or [])
    if words[:1] == ["--"]:
        words = words[1:]
    for value, description in candidates(args.root, words or [""]):
        print(f"{value}\t{description}" if description else value)
    return 0


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _verb_help(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest: a.help or "" for a in action._choices_actions}
    return {}


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {s: a for a in parser._actions for s in a.option_strings if a.help != argparse.SUPPRESS}


def candidates(parser: argparse.ArgumentParser, words: list[str]) -> list[tuple[str, str]]:
    """What may come as the last word of `cairn WORDS…`, with a description each."""
    partial, before = words[-1], words[:-1]
    verbs = _subparsers(parser)
    current = parser
    verb = None
    positionals: list[str] = []
    db = None
    i = 0
    while i < len(before):  # walk what is typed: the verb, option values, positionals
        word = before[i]
        options = _options(current)
        if word in options:
            action = options[word]
            takes = action.nargs != 0 and not isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction,
                                                                  argparse._CountAction, argparse._HelpAction))
            if takes and i + 1 < len(before):
                if word == "--db":
                    db = before[i + 1]
                i += 2
                continue
            if takes:  # the option's value is the word being completed
                return _values(action, partial, db)
            i += 1
            continue
        if verb is None and word in verbs:
            verb, current = word, verbs[word]
        elif not word.startswith("-"):
            positionals.append(word)
        i += 1
    if partial.startswith("-"):
        return sorted((s, a.help or "") for s, a in _options(current).items() if s.startswith(partial))
    if verb is None:
        helps = _verb_help(parser)
        return [(name, helps.get(name, "")) for name in verbs if name.startswith(partial) and name in helps]
    slots = [a for a in current._actions if not a.option_strings and a.help != argparse.SUPPRESS]
    if len(positionals) < len(slots):
        return _values(slots[len(positionals)], partial, db)
    if slots and slots[-1].nargs in ("*", "+", argparse.REMAINDER):
        return _values(slots[-1], partial, db)
    return []


def _values(action: argparse.Action, partial: str, db: str | None) -> list[tuple[str, str]]:
    if action.choices:
        return [(str(c), "") for c in action.choices if str(c).startswith(partial)]
    if action.type is id_arg:
        return _node_ids(partial, db)
    if action.type is path_arg or action.dest in ("db", "folder", "path", "file", "target"):
        return [(FILES, "")]
    return []


def _node_ids(partial: str, db: str | None) -> list[tuple[str, str]]:
    """The most recently changed nodes whose id starts with what is typed, with their titles."""
    from core.graph.store import Store
    from core.paths import db_path

    path = db_path(db)
    if not path.exists() or (partial and not partial.isdigit()):
        return []
    with Store(path, readonly=True) as store:
        rows = store.db.execute(
            "SELECT id, title FROM nodes WHERE CAST(id AS TEXT) LIKE ? ORDER BY updated_at DESC, id DESC LIMIT ?",
            (f"{partial}%", MAX_IDS)).fetchall()
    return [(str(r[0]), " ".join(str(r[1]).split())[:60]) for r in rows]


def register(verbs: Verbs) -> None:
    p = verbs.add("completion", cmd_completion, "print the shell completion script for bash, zsh or fish",
                  with_json=False)
    p.add_argument("shell", choices=SHELLS, help="the shell")
    p = verbs.add_hidden("__complete", cmd_complete)
    p.set_defaults(root=verbs.root)
    p.add_argument("words", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
