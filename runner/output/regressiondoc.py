"""The regression view's JSON document (``tooltrial report A B``): each matched arm before and after, the cells
that went pass to fail and back, the paired analysis and what changed between the two folders' inputs. Shapes are
pinned by ``schemas/report.schema.json`` as the report's are (runner.output.report).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from runner.output.report import arm_dict, paired_dict
from runner.output.store import SCHEMA_VERSION
from runner.scoring.regression import Regression

REGRESSION_KIND = "tooltrial.regression"


def regression_document(regression: Regression, before: str, after: str) -> dict[str, Any]:
    """The regression view of two results folders (paths ``before`` and ``after``); ``changed`` lists each
    change of inputs ``{name, change}``, ``left_out`` the ``case [arm]`` cells it kept from ``paired``."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": REGRESSION_KIND,
        "before": before,
        "after": after,
        "arms": [{"before": arm_dict(old), "after": arm_dict(new)} for old, new in regression.arms],
        "pass_to_fail": [dataclasses.asdict(c) for c in regression.pass_to_fail],
        "fail_to_pass": [dataclasses.asdict(c) for c in regression.fail_to_pass],
        "only_before": regression.only_before,
        "only_after": regression.only_after,
        "paired": paired_dict(regression.paired),
        "changed": [dataclasses.asdict(c) for c in regression.changed],
        "left_out": regression.left_out,
        "allow_changed": regression.allow_changed,
    }
