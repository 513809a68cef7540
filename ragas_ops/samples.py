"""A realistic sample of logged RAG interactions, for the demo, the tests and the benchmarks.

Deterministic for a given seed. Most rows are grounded answers over focused contexts; the rest
are the cases a nightly run must handle: answers with an invented fact, incomplete answers,
padded contexts, duplicated contexts, refusals, and a few rows that break the contract.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pyarrow as pa


@dataclass(frozen=True)
class Topic:
    passage: str
    question: str
    answer: str
    unfaithful_answer: str
    incomplete_answer: str


TOPICS = (
    Topic(
        "The Millau Viaduct is a cable-stayed bridge that spans the valley of the Tarn near "
        "Millau in southern France. It opened to traffic on 16 December 2004. One of its masts "
        "reaches 343 metres above the base of the structure.",
        "When did the Millau Viaduct open and how tall is its highest mast?",
        "The Millau Viaduct opened to traffic on 16 December 2004. Its highest mast reaches "
        "343 metres.",
        "The Millau Viaduct opened to traffic in June 2001. Its highest mast reaches 410 "
        "metres and it was designed by Gustave Eiffel.",
        "It opened in 2004.",
    ),
    Topic(
        "The PSLV-C56 mission was launched on 30 July 2023 from the Satish Dhawan Space Centre "
        "in Sriharikota. Its primary payload was the DS-SAR satellite, built for Singapore. "
        "Six other satellites flew as co-passengers.",
        "What was the primary payload of the PSLV-C56 mission and where was it launched from?",
        "The primary payload of PSLV-C56 was the DS-SAR satellite, built for Singapore. It was "
        "launched from the Satish Dhawan Space Centre in Sriharikota.",
        "The primary payload of PSLV-C56 was the Chandrayaan lander. It was launched from "
        "Kourou in French Guiana.",
        "The primary payload was DS-SAR.",
    ),
    Topic(
        "Refunds are accepted within 30 days of delivery for unused items in their original "
        "packaging. Refunds are paid to the original payment method within 5 business days. "
        "Shipping costs are not refunded.",
        "How long do I have to return an item, and when will I get my money back?",
        "You can return unused items in their original packaging within 30 days of delivery. "
        "The refund is paid to your original payment method within 5 business days.",
        "You can return any item within 90 days, even if used. The refund, including shipping "
        "costs, is paid within 24 hours.",
        "Within 30 days.",
    ),
    Topic(
        "The Premium plan costs 24 euros per user per month when billed annually. It includes "
        "single sign-on, audit logs and 1 TB of storage per user. Support answers within 4 "
        "hours on business days.",
        "What does the Premium plan cost and what does it include?",
        "The Premium plan costs 24 euros per user per month, billed annually. It includes "
        "single sign-on, audit logs and 1 TB of storage per user.",
        "The Premium plan costs 12 euros per user per month. It includes unlimited storage and "
        "24/7 phone support.",
        "It costs 24 euros.",
    ),
    Topic(
        "Aspirin should not be given to children under 16 because of the risk of Reye's "
        "syndrome. For adults, the usual dose for pain is 300 to 600 milligrams every four "
        "hours, with no more than 4 grams in 24 hours.",
        "What is the usual adult dose of aspirin for pain?",
        "The usual adult dose of aspirin for pain is 300 to 600 milligrams every four hours, "
        "with no more than 4 grams in 24 hours.",
        "The usual adult dose of aspirin is 1000 milligrams every hour. It is also safe for "
        "children of any age.",
        "Between 300 and 600 milligrams.",
    ),
    Topic(
        "The 2023 Turkey-Syria earthquake struck on 6 February 2023 with a magnitude of 7.8. "
        "Its epicentre was near Gaziantep. It was followed nine hours later by a magnitude 7.5 "
        "earthquake.",
        "What was the magnitude of the February 2023 Turkey-Syria earthquake and where was its "
        "epicentre?",
        "The earthquake had a magnitude of 7.8 and its epicentre was near Gaziantep.",
        "The earthquake had a magnitude of 6.1 and its epicentre was near Istanbul.",
        "It was a strong earthquake.",
    ),
)

PADDING = (
    "The company was founded in 1998 and has offices in twelve countries.",
    "Our newsletter is sent every Tuesday to subscribers who opted in.",
    "The visitor centre is open from 9 am to 6 pm, except on public holidays.",
    "Cookies are used to remember your preferences between visits.",
    "The annual report is available in English, French and German.",
)
REFUSAL = "I'm sorry, I could not find that information in the documents I have."
APPS = ("support-bot", "docs-search")
MODELS = ("rag-v1", "rag-v2")


def sample_interactions(
    rows: int,
    seed: int = 0,
    day: str = "2026-11-29",
    unfaithful_share: float = 0.15,
    *,
    citations: bool = False,
) -> pa.Table:
    """`rows` interactions logged on `day`, in the input contract with segment columns.

    `unfaithful_share` of the answers state facts their contexts do not support (a bad day for
    the RAG system has more of them); the other kinds keep their relative shares. With
    `citations`, a pass-through column of the sources the application showed beside each
    answer (the demo's criteria read it): the retrieved document, except on every seventh row,
    where it shows another one (`DOC-<n>`) that the answer does not name.
    """
    rng = random.Random(seed)
    start = datetime.fromisoformat(day).replace(tzinfo=UTC)
    records = [
        _interaction(rng, index, f"KB-{seed}-{index:05d}", unfaithful_share)
        for index in range(rows)
    ]
    stamps = sorted(start + timedelta(seconds=rng.uniform(0, 86_399)) for _ in range(rows))
    shown = (
        {"citations": pa.array([_citations(seed, index) for index in range(rows)])}
        if citations
        else {}
    )
    return pa.table(
        {
            "id": [f"{day}-{seed}-{index:06d}" for index in range(rows)],
            "timestamp": pa.array(stamps, pa.timestamp("us", tz="UTC")),
            "app": [rng.choice(APPS) for _ in range(rows)],
            "model_version": [rng.choice(MODELS) for _ in range(rows)],
            "question": [r[0] for r in records],
            "contexts": pa.array([r[1] for r in records], pa.list_(pa.string())),
            "answer": [r[2] for r in records],
            **shown,
        }
    )


def _citations(seed: int, index: int) -> list[str]:
    """The sources shown beside row `index`'s answer (see `sample_interactions`)."""
    return [f"DOC-{index:04d}"] if index % 7 == 3 else [f"KB-{seed}-{index:05d}"]


def _interaction(
    rng: random.Random, index: int, document: str, unfaithful_share: float
) -> tuple[str, list[str], str]:
    """One row. Contexts carry the retrieved document's label and answers cite it, as RAG
    systems do, so that rows are distinct (no two rows share a judge call)."""
    topic = TOPICS[index % len(TOPICS)]
    passage = f"[Source: {document}] {topic.passage}"
    focused = [passage]
    padded = [passage, *rng.sample(PADDING, 2)]
    others = (1.0 - unfaithful_share) / 0.85  # the other kinds' shares below add up to 0.85
    # (share of rows, contexts, answer)
    kinds: tuple[tuple[float, list[str], str], ...] = (
        (0.55 * others, rng.choice([focused, padded]), _cite(document, topic.answer)),
        (unfaithful_share, focused, _cite(document, topic.unfaithful_answer)),
        (0.10 * others, padded, _cite(document, topic.incomplete_answer)),
        (0.07 * others, [passage, passage], _cite(document, topic.answer)),
        (0.08 * others, [f"[Source: {document}] {t}" for t in rng.sample(PADDING, 2)], REFUSAL),
        (0.025 * others, focused, ""),  # breaks the contract: empty answer
        (0.025 * others, [], _cite(document, topic.answer)),  # breaks the contract: no contexts
    )
    draw = rng.random()
    for share, contexts, answer in kinds:
        if draw < share:
            return topic.question, contexts, answer
        draw -= share
    return topic.question, kinds[-1][1], kinds[-1][2]  # rounding left a sliver


def _cite(document: str, answer: str) -> str:
    return f"{answer} (Source: {document}.)"
