def pytest_addoption(parser):
    parser.addoption("--update-snapshots", action="store_true", help="Rewrite the golden .snap files.")
