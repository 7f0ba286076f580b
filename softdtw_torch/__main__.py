"""`python -m softdtw_torch --info`: versions and build facts (see softdtw_torch._info)."""
import sys

from ._info import main

sys.exit(main())
