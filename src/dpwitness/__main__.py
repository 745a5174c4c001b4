from dpwitness.cli import main

main()
