from logwright.cli import main

main()
