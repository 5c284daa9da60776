"""The core: Python source text in, findings (and fixed text) out. No disk, no click, no document
kinds: an adapter (devlint.documents) maps a notebook to Python source and calls in here."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import re
import tokenize
from functools import lru_cache

import libcst as cst

from devlint.complexity import (MAX_DEPTH, THREAD_DEPTH, Unanalysable, cannot_parse, deep_recursion, over_limit,
                                run_with_big_stack)
from devlint.config import Config
from devlint.context import FileContext
from devlint.frame_room import call_with_room
from devlint.fixer import UnplaceableDefinition, apply_edits, apply_fixes, define_device
from devlint.parsing import parse_module
from devlint.prefilter import TooComplex, parse_quietly, summarise
from devlint.model import Applicability, FileError, FileResult, Finding, Fix
from devlint.rendering import Rendering
from devlint.source import SourceError, decode
from devlint.rules.unused_noqa import UnusedNoqa
from devlint.suppressions import noqa_comment
from devlint.suppressions import parse as parse_suppressions

# Passes allowed per fixable finding of the first pass (a chain `x.cuda().cuda()...` takes one pass
# per call, since overlapping edits wait for the next pass).
MAX_FIX_PASSES = 6
_NEWLINE = re.compile(r"\r\n|\r|\n")


class FixDidNotConverge(Exception):
    pass


def check_source(path: str, data: bytes, config: Config) -> FileResult:
    """Check (and, with config.fix, fix) one Python file's bytes. Errors are returned, never raised.

    (A notebook is a document of another kind: devlint.documents chooses its adapter, which calls
    the functions below on the notebook's code.)"""
    result = FileResult(path)
    try:
        decoded = decode(data)
    except SourceError as exc:
        result.error = FileError(str(exc))
        return result
    text = decoded.text
    result.original_source = text
    project = project_view(path)
    try:
        with deep_recursion():
            if _needs_big_stack(text):
                findings = run_with_big_stack(_check_text, text, config, path, result, project)
            else:  # (a thread starts on a fresh frame stack of its own)
                findings = call_with_room(_check_text, text, config, path, result, project)
    except Unanalysable as exc:
        result.notice = str(exc)
        return result
    except cst.ParserSyntaxError as exc:
        refusal = _syntax_error(text, exc)
        if refusal is None:
            result.notice = str(cannot_parse(exc.message))
        else:
            result.error, result.findings = _explained(text, refusal, config, path)
        return result
    except RecursionError:
        result.error = FileError("too deeply nested to analyse (recursion limit reached)")
        return result
    except (TooDeeplyNested, TooComplex) as exc:
        result.error = FileError(str(exc))
        return result
    except FixDidNotConverge as exc:
        result.error = FileError(f"internal error: {exc}; the file was left unchanged", internal=True)
        return result
    except Exception as exc:  # a bug in devlint must not stop the run or print a traceback
        result.error = FileError(f"internal error: {type(exc).__name__}: {exc}", internal=True)
        return result
    result.findings = findings
    if project is not None and project.observed:
        # What the findings rest on besides these bytes (files read, files looked for and not
        # found: devlint.depends): the result cache checks each again.
        result.dependencies = dict(project.observed)
    return result


def project_view(path: str):
    """The file's view of the project index (devlint.analysis.project); None without a real path."""
    if not path or path == "-":
        return None
    from devlint.analysis.project import ProjectView
    from devlint.analysis.vocabulary import VOCABULARY

    return ProjectView(path, VOCABULARY)


def _check_text(text: str, config: Config, path: str, result: FileResult, project=None) -> list[Finding]:
    """The findings; with --fix or --add-noqa also fills `result` in."""
    if config.add_noqa:
        fixed, result.added_noqa = add_noqa_text(text, config, config.rules_for(path), project=project)
        if fixed != text:
            result.fixed_source = fixed
        return []
    if config.fix:
        fixed, applied, findings = fix_text(text, config, config.rules_for(path), project=project)
        result.applied = applied
        if fixed != text:
            result.fixed_source = fixed
        return findings
    return lint_text(text, config, config.rules_for(path), project=project)


def _needs_big_stack(text: str) -> bool:
    """Whether LibCST could recurse deep enough to need more than the usual thread stack."""
    try:
        summary = summarise(text)
    except TooComplex:
        return False  # refused before LibCST sees it
    return summary is None or summary.depth > THREAD_DEPTH


def _syntax_error(text: str, exc: cst.ParserSyntaxError) -> FileError | None:
    """The interpreter's own report (exception name, message, position) when it agrees the code is
    broken; None when it accepts the code (only LibCST cannot parse it)."""
    try:
        parse_quietly(text)
    except SyntaxError as error:
        return FileError(f"{type(error).__name__}: {error.msg}", error.lineno, error.offset)
    except (ValueError, RecursionError, MemoryError):
        return FileError(f"SyntaxError: {exc.message}", exc.raw_line, exc.raw_column + 1)
    return None


def _explained(text: str, error: FileError, config: Config, path: str) -> tuple[FileError, list[Finding]]:
    """A syntax error and the DL017 findings that explain it (devlint.rescue). With --fix, the
    error is the one that remains once those are renamed: the file did not parse even so."""
    from devlint import rescue

    rules = config.rules_for(path)
    found = rescue.findings(text, config, rules)
    if config.fix and not config.add_noqa and found:
        renamed, applied = rescue.rescue(text, config, rules)
        try:
            parse_quietly(renamed)
        except SyntaxError as remaining:
            if remaining.lineno is not None and remaining.offset is not None:
                column = rescue.original_column(remaining.lineno, remaining.offset, applied)
                error = FileError(f"{type(remaining).__name__}: {remaining.msg}", remaining.lineno, column)
            found = [rescue.not_applied(f) for f in found]
        except (ValueError, RecursionError, MemoryError):
            pass
    return error, found


def lint_text(text: str, config: Config, rules: tuple | None = None, project=None) -> list[Finding]:
    """`project`: the file's view of the project index (devlint.analysis.project.ProjectView), if any."""
    rules = config.rules() if rules is None else rules
    findings = _rule_findings(text, config, rules, project)
    if config.ignore_noqa or (not findings and UnusedNoqa not in rules):
        return findings  # (nothing to silence: the file's comments are not tokenized)
    suppressions = parse_suppressions(text)
    findings = [f for f in findings if not suppressions.silences(f)]
    if UnusedNoqa in rules and suppressions.lines:
        selected = {rule.code for rule in rules}
        lines = _NEWLINE.split(text)
        for directive in suppressions.lines.values():
            unused = UnusedNoqa.unused(directive, selected, lines[directive.line - 1])
            if unused is not None and not suppressions.silences_file(unused):
                findings.append(unused)
    return sorted(findings, key=lambda f: (f.start, f.code))


def _rule_findings(text: str, config: Config, rules: tuple, project=None) -> list[Finding]:
    if not rules or not _may_match(text, rules):
        return []
    try:
        module = parse_module(text)
    except cst.ParserSyntaxError as exc:
        if summarise(text) is not None:  # the interpreter reads it: LibCST's limitation, not the user's error
            raise cannot_parse(exc.message) from None
        raise
    ctx = FileContext(module, config.fix_options, project, text=text)
    checkers = [rule(ctx) for rule in rules]
    for node_type, nodes in ctx.nodes_by_type.items():
        for index, method in _dispatch(rules).get(node_type.__name__, ()):
            handler = getattr(checkers[index], method)
            for node in nodes:
                handler(node)
    return _where_edits_land(text, module, [f for c in checkers for f in c.findings])


def _where_edits_land(text: str, module: cst.Module, findings: list[Finding]) -> list[Finding]:
    """Keep a fix only where LibCST's positions map onto the original text (devlint.rendering).

    LibCST does not render every file byte for byte (`except (E) :` loses its space, a leading form
    feed disappears), and positions count in its rendering: an edit on a line whose rendering is not
    the text's would land a few characters off and corrupt the file. Those fixes become display-only.
    """
    if not any(f.fix is not None and f.fix.edits for f in findings):
        return findings
    rendering = Rendering(text, module.code)
    if rendering.identical:
        return findings
    kept = []
    for finding in findings:
        edits = finding.fix.edits if finding.fix is not None else ()
        if any(rendering.span(e.start, e.end) is None for e in edits):
            finding = dataclasses.replace(finding, fix=Fix(finding.fix.title, Applicability.DISPLAY_ONLY))
        kept.append(finding)
    return kept


def add_noqa_text(text: str, config: Config, rules: tuple | None = None, project=None) -> tuple[str, int]:
    """Append `# noqa: CODES` for every current finding (adopting devlint in one commit)."""
    by_line: dict[int, set[str]] = {}
    for finding in lint_text(text, config, rules, project):
        if finding.code != UnusedNoqa.code:
            by_line.setdefault(noqa_line(finding), set()).add(finding.code)
    if not by_line:
        return text, 0
    return insert_noqa(text, by_line), sum(len(c) for c in by_line.values())


def noqa_line(finding: Finding) -> int:
    """The line whose `# noqa` silences the finding: the last line of a multi-line statement."""
    return finding.suppress_lines[-1] if finding.suppress_lines else finding.start.line


def insert_noqa(text: str, by_line: dict[int, set[str]]) -> str:
    """`# noqa: CODES` on each line given, merged into a directive already there (also the language
    server's "Disable for this line")."""
    existing = parse_suppressions(text).lines
    pieces = re.split(r"(\r\n|\r|\n)", text)  # lines at even indexes, newlines at odd ones
    for line, codes in by_line.items():
        content = pieces[2 * (line - 1)]
        directive = existing.get(line)
        if directive is not None and directive.codes is not None:
            content = content[: directive.start] + noqa_comment(sorted(codes), directive) + content[directive.end:]
        else:
            content = f"{content.rstrip()}  {noqa_comment(sorted(codes), None)}"
        pieces[2 * (line - 1)] = content
    return "".join(pieces)


def apply_fix(text: str, finding: Finding, config: Config, project=None) -> str | None:
    """The text with this one finding's fix applied, a device definition included where it needs one
    (an editor's quick fix); None when the definition has no place in this file."""
    try:
        updated, _ = apply_fixes(text, [finding], config.fix_options, apply_edits, define_device, project=project)
    except UnplaceableDefinition:
        return None
    return updated


@lru_cache(maxsize=None)
def _dispatch(rules: tuple) -> dict[str, list[tuple[int, str]]]:
    """Node type name -> (rule index, method name), built once per selection."""
    table: dict[str, list[tuple[int, str]]] = {}
    for index, rule in enumerate(rules):
        for attribute in dir(rule):
            if attribute.startswith("visit_"):
                table.setdefault(attribute[len("visit_"):], []).append((index, attribute))
    return table


def _may_match(text: str, rules) -> bool:
    """Whether LibCST must analyse the file; raises Unanalysable where that is not safe."""
    summary = summarise(text)
    if summary is None:
        _check_nesting(text)  # the standard parser refused it: make sure LibCST's can survive it
        return True
    if not any(rule.could_match(summary) for rule in rules):
        return False
    if summary.depth > MAX_DEPTH:
        raise over_limit(summary.depth)
    return True


class TooDeeplyNested(Exception):
    pass


# CPython refuses more than 200 nested brackets; LibCST's native parser overflows its stack (a
# segmentation fault, not an exception) somewhere past a thousand.
MAX_BRACKET_DEPTH = 200


def _check_nesting(text: str) -> None:
    depth = deepest = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.OP:
                if token.string in "([{":
                    depth += 1
                    deepest = max(deepest, depth)
                    if deepest > MAX_BRACKET_DEPTH:
                        break
                elif token.string in ")]}":
                    depth -= 1
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    if deepest > MAX_BRACKET_DEPTH:
        raise TooDeeplyNested(f"too deeply nested: more than {MAX_BRACKET_DEPTH} levels of brackets")


def fixable(finding: Finding, config: Config) -> bool:
    if finding.fix is None or not finding.fix.edits:
        return False
    if finding.fix.applicability is Applicability.SAFE:
        return True
    return finding.fix.applicability is Applicability.UNSAFE and config.unsafe_fixes


def fix_text(text: str, config: Config, rules: tuple | None = None,
             project=None) -> tuple[str, list[Finding], list[Finding]]:
    """Fix, re-lint, repeat until nothing applicable remains: (text, applied, remaining findings)."""
    rules = config.rules() if rules is None else rules
    applied_all: list[Finding] = []
    current = text
    if "async" in text and not config.add_noqa:
        from devlint.rescue import rescue

        # `x.cuda(async=True)` does not parse: renamed first, the file is then checked as usual (DL017).
        current, applied_all = rescue(text, config, rules)
    seen = {_digest(current)}  # digests, not texts: a long chain of passes over a big file
    passes = 0
    budget = MAX_FIX_PASSES  # set from the first pass's findings: each pass applies at least one
    can_define = True  # False once the device definition could not be spliced into this file
    while passes < budget:
        findings = lint_text(current, config, rules, project)
        chosen = [f for f in findings if fixable(f, config) and (can_define or not f.fix.needs_device)]
        if not chosen:
            return current, applied_all, findings
        if passes == 0:
            budget = MAX_FIX_PASSES * len(chosen)
        passes += 1
        try:
            # A fix that needs a device gets its definition where it runs (see devlint.analysis.device).
            updated, applied = apply_fixes(current, chosen, config.fix_options, apply_edits, define_device,
                                           project=project)
        except UnplaceableDefinition:
            # Only the fixes that need no new definition; the others stay reported.
            can_define = False
            updated, applied = apply_edits(current, [f for f in chosen if not f.fix.needs_device])
        if updated == current:
            return current, applied_all, findings
        digest = _digest(updated)
        if digest in seen:
            raise FixDidNotConverge(f"fixes undo each other after {passes} passes")
        seen.add(digest)
        applied_all.extend(applied)
        current = updated
    raise FixDidNotConverge(f"fixes did not converge after {passes} passes")


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def unsafe_fix_count(findings: list[Finding]) -> int:
    return sum(1 for f in findings if f.fix is not None and f.fix.applicability is Applicability.UNSAFE)

