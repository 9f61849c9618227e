from garlicfarm.cli.main import main

raise SystemExit(main())
