"""The verdict both torch reference scripts end with: exit status 2 when oxinfer itself failed,
1 on a mismatch, 0 when every case matched; one line saying which."""
import sys


def verdict(oxinfer_errors, failures):
    if oxinfer_errors:
        print("oxinfer failed on: " + ", ".join(oxinfer_errors), file=sys.stderr)
        return 2
    if failures:
        print("MISMATCH in: " + ", ".join(failures), file=sys.stderr)
        return 1
    print("all cases match the torch reference")
    return 0
