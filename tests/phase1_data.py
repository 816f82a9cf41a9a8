"""A PRM800K phase 1 line for the phase 1 mode's tests: a small tree with its candidates.

Step 1 had three candidates (the labeler chose B), step 2 two (the labeler chose A), step 3 one,
which gives the answer. Written as PRM800K published its lines.
"""

from __future__ import annotations

import json
from pathlib import Path

PROBLEM = "What is $2 + 3 \\cdot 4$?"
STEP1 = ["Add first: $2 + 3 = 5$.", "Multiply first: $3 \\cdot 4 = 12$.", "I see a sum."]
STEP2 = ["Then $2 + 12 = 14$.", "Then $2 + 12 = 15$."]
STEP3 = "So the answer is 14.\n\n# Answer\n\n14"

LINE = {
    "labeler": "0b5f1c3e-0000-4000-8000-000000000001",
    "timestamp": "2022-07-30T23:23:32.118856",
    "generation": None,
    "is_quality_control_question": False,
    "is_initial_screening_question": False,
    "question": {"problem": PROBLEM, "ground_truth_answer": "14"},
    "label": {
        "steps": [
            {
                "completions": [
                    {"text": STEP1[0], "rating": -1, "flagged": False},
                    {"text": STEP1[1], "rating": 1, "flagged": False},
                    {"text": STEP1[2], "rating": 0, "flagged": False},
                ],
                "human_completion": None,
                "chosen_completion": 1,
            },
            {
                "completions": [
                    {"text": STEP2[0], "rating": 1, "flagged": False},
                    {"text": STEP2[1], "rating": -1, "flagged": False},
                ],
                "human_completion": None,
                "chosen_completion": 0,
            },
            {
                "completions": [{"text": STEP3, "rating": 1, "flagged": False}],
                "human_completion": None,
                "chosen_completion": 0,
            },
        ],
        "total_time": 120000,
        "finish_reason": "solution",
    },
}


def write_line(path: Path) -> Path:
    path.write_text(json.dumps(LINE) + "\n", encoding="utf-8")
    return path
