"""The error of bad settings, in a module of its own: the replay of a warm run (devlint.replay) reads
the settings file without importing the configuration and its rule table."""


class ConfigError(Exception):
    """Bad settings; the message names the option or file and what is wrong."""
