from leaderworkerset.cli.main import main

main()
