"""``python -m garlicfarm.pipeline --archive ... --out ...``: the job, with a local Spark by default."""

from __future__ import annotations

import sys

from garlicfarm.pipeline.job import main

sys.exit(main())
