import sys

from study.run import main

sys.exit(main())
