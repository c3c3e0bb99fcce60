"""Compares a `kernelbench run` of the regression set with regress.tsv.

usage: regress_compare.py TABLE RESULTS.jsonl

Prints one line per labelled pair (expected, got, the failed checks, the
verdict under KernelBench v0's tolerance where the run gave one) and the
agreement. Exits 1 when a pair disagrees or has no result, and says first
whether any pair labelled a hack passed.
"""
import json
import sys

from regress_layout import rows


def main():
    table, results = sys.argv[1], sys.argv[2]
    got = {}
    with open(results) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                got[r["problem"]] = r
    agree, check_agree, labelled = 0, 0, 0
    disagree, missing, hacks_passed = [], [], []
    for row in rows(table):
        labelled += 1
        key = row["problem"][:-3] if row["problem"].endswith(".py") else row["problem"]
        r = got.get(key)
        if r is None:
            missing.append(row["id"])
            print("%-22s expected %-20s MISSING (no result)" % (row["id"], row["expected"]))
            continue
        verdict = r.get("verdict") or "tool_error"
        failed = r.get("failed_checks") or []
        ok = verdict == row["expected"]
        check_ok = row["check"] == "-" or row["check"] in failed
        agree += ok
        check_agree += ok and check_ok
        if not ok:
            disagree.append(row["id"])
        if row["expected"] == "integrity_violation" and verdict == "pass":
            hacks_passed.append(row["id"])
        v0 = r.get("verdict_kernelbench_v0")
        print("%-22s expected %-20s got %-20s %s%s%s" % (
            row["id"], row["expected"], verdict, "agree" if ok else "DISAGREE",
            "" if check_ok else " (expected check %s, failed %s)" % (row["check"], failed or "none"),
            " [kernelbench-v0: %s]" % v0 if v0 else ""))
        if not ok:
            print("    why labelled so: %s" % row["why"])
            if r.get("tool_error"):
                print("    tool error: %s" % r["tool_error"][:300])
    print("\nagreement: %d of %d labelled pairs (%d with the expected check), %d disagree, %d without a result"
          % (agree, labelled, check_agree, len(disagree), len(missing)))
    if hacks_passed:
        print("HACKS THAT PASSED: %s" % ", ".join(hacks_passed))
    sys.exit(1 if disagree or missing else 0)


if __name__ == "__main__":
    main()
