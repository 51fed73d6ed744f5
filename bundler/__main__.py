from bundler.launch import main

main()
