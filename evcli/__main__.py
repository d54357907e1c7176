from evcli.cli import main

main()
