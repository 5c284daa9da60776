"""The Config a run uses: command-line options over the nearest [tool.devlint] (shared by the command
line, the editor server and the flake8 plugin, so that all three check a file the same way)."""

from __future__ import annotations

from devlint import settings
from devlint.config import Config, ConfigError, FixOptions, split_codes, validate_codes
from devlint.output import OUTPUT_FORMATS


def config_for(path: str) -> Config:
    """The Config that `devlint PATH` checks PATH with: the nearest [tool.devlint], no command-line
    options (for the flake8 plugin). Raises ConfigError."""
    config = merge({}, settings.resolve([path], None, False), False)[0]
    config.codes()
    return config


def merge(options: dict, file_settings: settings.FileSettings, fix: bool):
    """CLI options win over [tool.devlint]; returns (Config, output format, exclude, extend-exclude)."""
    values = file_settings.values

    def pick(option: str, default=None):
        given = options.get(option.replace("-", "_"))
        return given if given is not None else values.get(option, default)

    def codes(option: str):
        given = options.get(option.replace("-", "_"))
        return split_codes(given) if given is not None else tuple(values.get(option, ()))

    device_name = pick("device-name", "device")
    from devlint.device_options import device_expression_problem, device_name_problem  # no LibCST

    for key, problem in (("device-name", device_name_problem(device_name)),
                         ("device-expression", device_expression_problem(pick("device-expression", "cuda")))):
        if problem is not None:  # the fixer writes `NAME = EXPRESSION` into the user's file
            given = options.get(key.replace("-", "_")) is not None
            where = f"--{key}" if given else f"{file_settings.path}: [tool.devlint] {key}"
            shown = repr(pick(key))
            shown = shown if len(shown) <= 80 else f"{shown[:60]}... ({len(shown)} characters)"
            raise ConfigError(f"{where}: {shown} {problem}")
    map_location = pick("map-location", "auto")
    if map_location not in ("auto", "device", "cpu"):
        raise ConfigError(f"{file_settings.path}: [tool.devlint] map-location = {map_location!r}: "
                          "must be auto, device or cpu")
    output_format = pick("output-format", "text")
    if output_format not in OUTPUT_FORMATS:
        raise ConfigError(f"{file_settings.path}: [tool.devlint] output-format = {output_format!r}: "
                          f"must be one of {', '.join(OUTPUT_FORMATS)}")
    for key in ("select", "extend-select", "ignore"):
        validate_codes(values.get(key, ()), f"{file_settings.path}: [tool.devlint] {key}")
    for glob, listed in values.get("per-file-ignores", {}).items():
        validate_codes(listed, f"{file_settings.path}: [tool.devlint] per-file-ignores {glob!r}")
    config = Config(
        select=codes("select") or None,
        extend_select=codes("extend-select"),
        ignore=codes("ignore"),
        fix=fix,
        unsafe_fixes=bool(pick("unsafe-fixes", False)),
        fix_options=FixOptions(device_name, pick("device-expression", "cuda"), map_location),
        per_file_ignores=tuple((glob, tuple(c)) for glob, c in values.get("per-file-ignores", {}).items()),
        root=file_settings.root,
        max_file_size=pick("max-file-size", Config.max_file_size),
    )
    exclude = values.get("exclude")
    return config, output_format, exclude, tuple(values.get("extend-exclude", ()))
