#!/usr/bin/env python3
"""Baseline difficulty check for the conversation retrieval set.

Ranks every turn of a question's conversation with plain BM25 (k1 1.2,
b 0.75, lowercased word tokens, small stop-word list, no stemming) over
"Speaker: text" and prints turn-level recall@5 / recall@10 (share of the
evidence turns found in the top k, averaged over questions), overall and per
category, plus the share of questions that have at most one content word in
common with every one of their evidence turns, counting the "Speaker: "
prefix and on the text alone, and the share of questions with a rare word
(in at most 5% of the conversation's turns, not a speaker's name) that occurs
within 6 turns of an evidence turn in its session but in no evidence turn.
Standard library only:

    python3 tests/data/conversations/check_bm25.py
"""
import json
import math
import os
import re
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
K1, B = 1.2, 0.75
STOP = set("""a an the and or but of to in on at for with from by about as into over after before
is are was were be been being am do does did done have has had having will would can could should
what when where who whom which why how that this these those there here it its it's i me my mine
you your yours he him his she her hers we us our they them their s t d ll re ve m not no so if then
than too very just up out off any some all each""".split())


def tokens(text):
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP]


def main():
    convs = {}
    near = {}       # ref -> the refs within 6 turns in the same session
    with open(os.path.join(HERE, "conversations.jsonl"), encoding="utf-8") as f:
        for line in f:
            c = json.loads(line)
            docs = [(t["ref"], tokens("%s: %s" % (t["speaker"], t["text"])))
                    for s in c["sessions"] for t in s["turns"]]
            df = Counter()
            for _, toks in docs:
                df.update(set(toks))
            avg = sum(len(t) for _, t in docs) / len(docs)
            plain = {t["ref"]: tokens(t["text"]) for s in c["sessions"] for t in s["turns"]}
            plain_df = Counter()
            for toks in plain.values():
                plain_df.update(set(toks))
            names = set(tokens(" ".join(c["speakers"])))
            rare = set(w for w, n in plain_df.items() if n <= 0.05 * len(plain) and w not in names)
            convs[c["conversation_id"]] = (docs, df, avg, {r: t for r, t in docs}, plain, rare)
            for s in c["sessions"]:
                refs = [t["ref"] for t in s["turns"]]
                for j, r in enumerate(refs):
                    near[r] = refs[max(0, j - 6):j + 7]
    sums = defaultdict(lambda: [0, 0.0, 0.0, 0, 0, 0])
    with open(os.path.join(HERE, "questions.jsonl"), encoding="utf-8") as f:
        for line in f:
            q = json.loads(line)
            docs, df, avg, by_ref, plain, rare = convs[q["conversation_id"]]
            n = len(docs)
            qt = tokens(q["question"])
            scores = []
            for ref, toks in docs:
                tf = Counter(toks)
                s = 0.0
                for w in qt:
                    if w in tf:
                        idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                        s += idf * tf[w] * (K1 + 1) / (tf[w] + K1 * (1 - B + B * len(toks) / avg))
                scores.append((-s, ref))
            scores.sort()
            ranked = [r for _, r in scores]
            ev = q["evidence"]
            r5 = sum(1 for r in ev if r in ranked[:5]) / len(ev)
            r10 = sum(1 for r in ev if r in ranked[:10]) / len(ev)
            qset = set(qt)
            shared = max(len(qset & set(by_ref[r])) for r in ev)
            low = 1 if shared <= 1 else 0
            low_text = 1 if max(len(qset & set(plain[r])) for r in ev) <= 1 else 0
            in_ev = set(w for r in ev for w in plain[r])
            around = set(w for r in ev for n in near[r] if n not in ev for w in plain[n])
            nearby = 1 if (qset & rare & around) - in_ev else 0
            for key in ("all", q["category"]):
                acc = sums[key]
                acc[0] += 1
                acc[1] += r5
                acc[2] += r10
                acc[3] += low
                acc[4] += low_text
                acc[5] += nearby
    print("plain BM25 (k1 1.2, b 0.75, no stems) over `Speaker: text`")
    for key in ("all", "single-hop", "multi-hop", "temporal", "open-domain"):
        n, r5, r10, low, low_text, _ = sums[key]
        print("%-12s n=%4d  recall@5 %.3f  recall@10 %.3f  <=1 shared word: %.2f (text only %.2f)"
              % (key, n, r5 / n, r10 / n, low / n, low_text / n))
    print("rare question word near the evidence but not in it: %s" % "  ".join(
        "%s %.2f" % (key, sums[key][5] / sums[key][0])
        for key in ("all", "single-hop", "multi-hop", "temporal", "open-domain")))


if __name__ == "__main__":
    main()
