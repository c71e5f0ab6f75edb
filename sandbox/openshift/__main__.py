import sys

from sandbox.openshift.main import main

sys.exit(main())
