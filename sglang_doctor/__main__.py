from sglang_doctor.cli.entry import main

if __name__ == "__main__":
    main()
