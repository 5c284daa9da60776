from devlint.cli import main

main()
