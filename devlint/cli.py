"""The `devlint` command: options -> Config -> files -> engine -> report -> exit code."""

from __future__ import annotations

import sys

import click

from devlint import __version__
from devlint.config import Config, ConfigError, split_codes
from devlint.context import FixOptions
from devlint.files import discover
from devlint.report import (
    EXIT_ERROR,
    error_line,
    exit_code,
    finding_line,
    render_diff,
    render_json,
    render_text,
)
from devlint.rules import ALL_RULES, RULES_BY_CODE
from devlint.runner import check_files

OUTPUT_FORMATS = ("text", "json")


class _DefaultToCheck(click.Group):
    """`devlint [OPTIONS] PATHS` means `devlint check ...`; `devlint rule DL001` is a subcommand."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--version",)):
            args = ["check", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_DefaultToCheck, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="devlint")
def main() -> None:
    """devlint: find and fix PyTorch device bugs."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--select", help="Comma-separated rule codes or prefixes to enable (ALL for every rule).")
@click.option("--extend-select", help="Rule codes or prefixes to enable on top of the selection.")
@click.option("--ignore", help="Comma-separated rule codes or prefixes to disable.")
@click.option("--output-format", type=click.Choice(OUTPUT_FORMATS), default="text", show_default=True)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("--fix", is_flag=True, help="Apply safe fixes.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (with --fix) or count unsafe fixes.")
@click.option("--diff", is_flag=True, help="Print the diff the fixes would make; write nothing.")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when --fix changed a file.")
@click.option("--show-fixes", is_flag=True, help="List the fixes --fix applied.")
@click.option("--device-name", default="device", show_default=True, help="Variable the fixes use for the device.")
@click.option("--device-expression", default="cuda", show_default=True,
              help="What an inserted device definition says: 'cuda' (CUDA else CPU), 'accelerator' "
                   "(torch.accelerator, for MPS/XPU too) or a Python expression.")
@click.option("--map-location", type=click.Choice(("auto", "device", "cpu")), default="auto", show_default=True,
              help="What DL002's fix writes: 'cpu' for load_state_dict inputs and device otherwise (auto).")
@click.version_option(__version__, prog_name="devlint")
def check(paths, select, extend_select, ignore, output_format, exit_zero, fix, unsafe_fixes, diff,
          exit_non_zero_on_fix, show_fixes, device_name, device_expression, map_location) -> None:
    """Check PATHS (files or folders; default: .) for PyTorch device bugs.

    Exit codes: 0 no findings, 1 findings, 2 bad input, usage or internal error.
    `devlint rule CODE` prints a rule's documentation.
    """
    if not device_name.isidentifier():
        _fail(f"--device-name: {device_name!r} is not a Python identifier")
    config = Config(
        select=split_codes(select) or None,
        extend_select=split_codes(extend_select),
        ignore=split_codes(ignore),
        fix=fix or diff,
        unsafe_fixes=unsafe_fixes,
        fix_options=FixOptions(device_name, device_expression, map_location),
    )
    try:
        config.rules()
    except ConfigError as exc:
        _fail(str(exc))

    discovered = discover(list(paths) or ["."])
    for path, reason in discovered.errors:
        click.echo(f"{path}: error: {reason}", err=True)
    results = check_files(discovered.files, config, write=fix and not diff)
    for result in results:
        if result.error:
            click.echo(error_line(result), err=True)

    if diff:
        diffs = [render_diff(r) for r in results if r.fixed_source is not None]
        click.echo("".join(diffs), nl=False)
        code = exit_code(results, len(discovered.errors), exit_zero=False)
        sys.exit(code if code == EXIT_ERROR else int(bool(diffs)))

    if output_format == "json":
        click.echo(render_json(results), nl=False)
    else:
        click.echo(render_text(results, fixing=fix, unsafe_fixes=unsafe_fixes), nl=False)
    if fix and show_fixes:
        for result in results:
            for applied in result.applied:
                click.echo(f"Fixed {finding_line(result.path, applied)} -> {applied.fix.title}", err=True)
    code = exit_code(results, len(discovered.errors), exit_zero=exit_zero)
    if code != EXIT_ERROR and exit_non_zero_on_fix and any(r.fixed_source for r in results):
        code = 1
    sys.exit(code)


@main.command()
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="Print every rule's documentation.")
def rule(code: str | None, show_all: bool) -> None:
    """Print the documentation of rule CODE (e.g. DL002), or list the rules."""
    if show_all:
        for each in ALL_RULES:
            click.echo(f"# {each.code} {each.name}\n\n{each.documentation()}\n")
        return
    if code is None:
        for each in ALL_RULES:
            click.echo(f"{each.code}  {each.name:36} {each.summary()}")
        return
    found = RULES_BY_CODE.get(code.upper()) or next((r for r in ALL_RULES if r.name == code), None)
    if found is None:
        _fail(f"unknown rule {code!r} (known: {', '.join(RULES_BY_CODE)})")
    click.echo(f"# {found.code} {found.name}\n\n{found.documentation()}")


def _fail(message: str) -> None:
    click.echo(f"devlint: error: {message}", err=True)
    sys.exit(EXIT_ERROR)
