def pytest_addoption(parser):
    parser.addoption("--update-snapshots", action="store_true", help="Rewrite the golden .snap files.")


def pytest_collection_modifyitems(session, config, items):
    """The few tests marked slow (whole corpora, package installs) go first, so that the workers share
    them out at the start rather than one worker running a several-minute test after the others are done."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
