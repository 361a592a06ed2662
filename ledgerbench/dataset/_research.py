"""The authored research and brief sets: specifications and the builder behind ``build-research``.

There is no ERP truth for these questions, so they are written by hand as specifications here (real
public companies, their peers, segments and markets; question forms with an explicit period and a
reason the user asks) and expanded deterministically into
``datasets/web/entity_performance_web.yaml`` and ``datasets/web/business_briefs_web.yaml``: the
sets for runs with live web tools (paper comparability). No accuracy tags: the right figures move
over time; the rubric judges depth, recency, citations and the rest.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from ledgerbench_core.dataset._loader import write_dataset
from ledgerbench_core.dataset._records import Dataset, DatasetHeader, Question, TaskType
from ledgerbench_core.dataset._rubric import RUBRIC_VERSION, build_tags

SEED = 20251129

SEGMENT_COUNTS: dict[str, int] = {
    "Financial Performance & Financial Health": 44,
    "Peers & Competitive Positioning": 44,
    "Product & Service Intelligence": 18,
    "Investor & Funding Landscape": 15,
    "Geographic & Governmental Insights": 5,
}
"""Items per segment: the published split (126 questions)."""


@dataclass(frozen=True)
class Company:
    name: str
    peers: tuple[str, str]
    segments: tuple[str, str]
    """Two business lines the company reports (or discloses revenue for)."""
    market: str
    global_footprint: bool = False
    """Sells or manufactures widely outside the US (candidate for geographic questions)."""


COMPANIES: tuple[Company, ...] = (
    Company(
        "Apple", ("Samsung Electronics", "Alphabet"), ("iPhone", "Services"), "smartphones", True
    ),
    Company(
        "Microsoft",
        ("Amazon", "Alphabet"),
        ("Productivity and Business Processes", "Intelligent Cloud"),
        "cloud infrastructure",
    ),
    Company(
        "Amazon",
        ("Walmart", "Microsoft"),
        ("online stores", "Amazon Web Services"),
        "cloud infrastructure",
        True,
    ),
    Company(
        "Alphabet",
        ("Meta Platforms", "Microsoft"),
        ("Google Services", "Google Cloud"),
        "digital advertising",
    ),
    Company(
        "Meta Platforms",
        ("Alphabet", "Snap"),
        ("Family of Apps", "Reality Labs"),
        "digital advertising",
    ),
    Company(
        "NVIDIA",
        ("Advanced Micro Devices", "Intel"),
        ("Data Center", "Gaming"),
        "AI accelerators",
        True,
    ),
    Company(
        "Advanced Micro Devices",
        ("Intel", "NVIDIA"),
        ("Data Center", "Client"),
        "server processors",
    ),
    Company(
        "Intel",
        ("Advanced Micro Devices", "Qualcomm"),
        ("Client Computing Group", "Data Center and AI"),
        "PC processors",
        True,
    ),
    Company(
        "Caterpillar",
        ("Deere & Company", "Komatsu"),
        ("Construction Industries", "Energy & Transportation"),
        "construction equipment",
        True,
    ),
    Company(
        "Deere & Company",
        ("CNH Industrial", "AGCO"),
        ("Production & Precision Agriculture", "Construction & Forestry"),
        "farm equipment",
    ),
    Company(
        "Walmart",
        ("Costco Wholesale", "Target"),
        ("Walmart U.S.", "Walmart International"),
        "US grocery retail",
        True,
    ),
    Company(
        "Costco Wholesale",
        ("Walmart", "BJ's Wholesale Club"),
        ("merchandise sales", "membership fees"),
        "warehouse clubs",
    ),
    Company(
        "Target",
        ("Walmart", "Costco Wholesale"),
        ("food and beverage", "apparel and accessories"),
        "US general merchandise retail",
    ),
    Company(
        "The Home Depot",
        ("Lowe's", "Floor & Decor"),
        ("do-it-yourself customers", "professional customers"),
        "home improvement retail",
    ),
    Company(
        "Lowe's",
        ("The Home Depot", "Floor & Decor"),
        ("do-it-yourself customers", "professional customers"),
        "home improvement retail",
    ),
    Company(
        "The Coca-Cola Company",
        ("PepsiCo", "Keurig Dr Pepper"),
        ("sparkling soft drinks", "water, sports, coffee and tea"),
        "non-alcoholic beverages",
        True,
    ),
    Company(
        "PepsiCo",
        ("The Coca-Cola Company", "Mondelez International"),
        ("Frito-Lay North America", "PepsiCo Beverages North America"),
        "snacks and beverages",
        True,
    ),
    Company(
        "Procter & Gamble",
        ("Unilever", "Colgate-Palmolive"),
        ("Fabric & Home Care", "Beauty"),
        "household products",
        True,
    ),
    Company(
        "Unilever",
        ("Procter & Gamble", "Nestle"),
        ("Beauty & Wellbeing", "Foods"),
        "consumer staples",
        True,
    ),
    Company("Nestle", ("Unilever", "Danone"), ("coffee", "PetCare"), "packaged food", True),
    Company(
        "Boeing",
        ("Airbus", "Embraer"),
        ("Commercial Airplanes", "Defense, Space & Security"),
        "commercial aircraft",
        True,
    ),
    Company(
        "Airbus",
        ("Boeing", "Embraer"),
        ("Commercial Aircraft", "Defence and Space"),
        "commercial aircraft",
        True,
    ),
    Company(
        "Lockheed Martin",
        ("Northrop Grumman", "RTX"),
        ("Aeronautics", "Missiles and Fire Control"),
        "defense contracting",
    ),
    Company(
        "United Parcel Service",
        ("FedEx", "DHL Group"),
        ("U.S. Domestic Package", "International Package"),
        "parcel delivery",
        True,
    ),
    Company(
        "FedEx",
        ("United Parcel Service", "DHL Group"),
        ("Federal Express", "FedEx Freight"),
        "parcel delivery",
        True,
    ),
    Company(
        "A.P. Moller-Maersk",
        ("Hapag-Lloyd", "ZIM Integrated Shipping"),
        ("Ocean", "Logistics & Services"),
        "container shipping",
        True,
    ),
    Company(
        "Siemens",
        ("Schneider Electric", "ABB"),
        ("Digital Industries", "Smart Infrastructure"),
        "industrial automation",
        True,
    ),
    Company(
        "Honeywell",
        ("Siemens", "Emerson Electric"),
        ("Aerospace Technologies", "Industrial Automation"),
        "industrial technology",
    ),
    Company(
        "Johnson & Johnson",
        ("Pfizer", "Merck & Co."),
        ("Innovative Medicine", "MedTech"),
        "pharmaceuticals",
        True,
    ),
    Company(
        "Pfizer",
        ("Merck & Co.", "Johnson & Johnson"),
        ("Biopharma", "Pfizer CentreOne"),
        "pharmaceuticals",
        True,
    ),
    Company(
        "Cencora",
        ("McKesson", "Cardinal Health"),
        ("U.S. Healthcare Solutions", "International Healthcare Solutions"),
        "drug distribution",
    ),
    Company(
        "McKesson",
        ("Cencora", "Cardinal Health"),
        ("U.S. Pharmaceutical", "Medical-Surgical Solutions"),
        "drug distribution",
    ),
    Company(
        "Visa",
        ("Mastercard", "American Express"),
        ("service revenue", "data processing revenue"),
        "card payment networks",
        True,
    ),
    Company(
        "Mastercard",
        ("Visa", "American Express"),
        ("payment network", "value-added services and solutions"),
        "card payment networks",
        True,
    ),
    Company(
        "JPMorgan Chase",
        ("Bank of America", "Citigroup"),
        ("Consumer & Community Banking", "Commercial & Investment Bank"),
        "US banking",
    ),
    Company(
        "The Goldman Sachs Group",
        ("Morgan Stanley", "JPMorgan Chase"),
        ("Global Banking & Markets", "Asset & Wealth Management"),
        "investment banking",
    ),
    Company(
        "AT&T",
        ("Verizon Communications", "T-Mobile US"),
        ("Mobility", "Business Wireline"),
        "US wireless",
    ),
    Company(
        "Verizon Communications", ("AT&T", "T-Mobile US"), ("Consumer", "Business"), "US wireless"
    ),
    Company(
        "T-Mobile US", ("AT&T", "Verizon Communications"), ("postpaid", "prepaid"), "US wireless"
    ),
    Company(
        "The Walt Disney Company",
        ("Comcast", "Netflix"),
        ("Entertainment", "Experiences"),
        "streaming and theme parks",
        True,
    ),
    Company(
        "Netflix",
        ("The Walt Disney Company", "Warner Bros. Discovery"),
        ("United States and Canada streaming", "Europe, Middle East and Africa streaming"),
        "video streaming",
        True,
    ),
    Company(
        "Hilton Worldwide",
        ("Marriott International", "Hyatt Hotels"),
        ("management and franchise", "ownership"),
        "hotels",
    ),
    Company(
        "American Airlines Group",
        ("Delta Air Lines", "United Airlines Holdings"),
        ("passenger", "cargo"),
        "US airlines",
    ),
    Company(
        "Toyota Motor",
        ("Volkswagen", "Hyundai Motor"),
        ("Automotive", "Financial Services"),
        "automobiles",
        True,
    ),
    Company(
        "Tesla",
        ("BYD", "General Motors"),
        ("automotive", "energy generation and storage"),
        "electric vehicles",
        True,
    ),
    Company(
        "Ford Motor",
        ("General Motors", "Stellantis"),
        ("Ford Blue", "Ford Model e"),
        "US automobiles",
    ),
    Company(
        "Taiwan Semiconductor Manufacturing",
        ("Samsung Electronics", "GlobalFoundries"),
        ("high-performance computing", "smartphone"),
        "contract chip manufacturing",
        True,
    ),
    Company(
        "Samsung Electronics",
        ("SK hynix", "Micron Technology"),
        ("Device Solutions", "Device eXperience"),
        "memory chips",
        True,
    ),
    Company(
        "SAP",
        ("Oracle", "Microsoft"),
        ("cloud", "software licenses and support"),
        "enterprise software",
        True,
    ),
    Company(
        "Oracle",
        ("SAP", "Microsoft"),
        ("cloud services and license support", "hardware"),
        "enterprise software",
    ),
    Company(
        "Salesforce",
        ("Microsoft", "Oracle"),
        ("subscription and support", "professional services"),
        "CRM software",
    ),
    Company("IBM", ("Accenture", "Microsoft"), ("Software", "Consulting"), "IT services"),
    Company(
        "Accenture", ("IBM", "Capgemini"), ("Consulting", "Managed Services"), "IT services", True
    ),
    Company(
        "Exxon Mobil",
        ("Chevron", "Shell"),
        ("Upstream", "Energy Products"),
        "integrated oil and gas",
        True,
    ),
    Company(
        "Shell",
        ("BP", "TotalEnergies"),
        ("Integrated Gas", "Upstream"),
        "integrated oil and gas",
        True,
    ),
    Company(
        "Nike", ("Adidas", "Lululemon Athletica"), ("footwear", "apparel"), "athletic apparel", True
    ),
    Company(
        "LVMH",
        ("Kering", "Hermes"),
        ("Fashion & Leather Goods", "Wines & Spirits"),
        "luxury goods",
        True,
    ),
    Company(
        "3M",
        ("Honeywell", "Illinois Tool Works"),
        ("Safety and Industrial", "Transportation and Electronics"),
        "diversified industrials",
    ),
)

FY_PERIODS = ("FY2024", "fiscal 2024", "FY2024 versus FY2023")
QUARTER_PERIODS = ("the September 2025 quarter", "the June 2025 quarter", "the first half of 2025")
CREDIT_LINES = ("$10 million", "$25 million", "$50 million", "$150 million")

REASONS: dict[str, tuple[str, ...]] = {
    "Financial Performance & Financial Health": (
        "I'm preparing a credit review before we renew their {line} trade credit line.",
        "They are one of our largest customers and we're deciding whether to move them to Net 60.",
        "We're checking a key supplier's financial health ahead of a multi-year contract.",
        "Our credit committee meets next week and needs a view on this counterparty.",
        "This feeds our quarterly counterparty risk report.",
    ),
    "Peers & Competitive Positioning": (
        "This is for a peer benchmarking slide in our board pack.",
        "We're choosing between them as a strategic supplier.",
        "Our CFO wants to know where they stand before a pricing negotiation.",
        "We're screening the sector for a possible acquisition.",
    ),
    "Product & Service Intelligence": (
        "We're sizing our exposure to that business line.",
        "Our sales team is planning next year's account strategy with them.",
        "We're deciding which of their product lines to partner on.",
    ),
    "Investor & Funding Landscape": (
        "Treasury needs it to set counterparty limits.",
        "It's for an investment committee memo.",
        "We're assessing refinancing risk before signing a five-year supply agreement.",
    ),
    "Geographic & Governmental Insights": (
        "We're assessing supply-chain and country risk for our sourcing plan.",
        "Our risk team is updating its geopolitical exposure map.",
    ),
}


@dataclass(frozen=True)
class Form:
    """One question form: text with placeholders, its sub-kind and the rubric options it implies."""

    key: str
    text: str
    metrics: tuple[str, ...]
    period_kind: str
    """fy | quarter | fixed: which period list fills {period}."""
    comparison: bool = False
    global_context: bool = False
    fixed_period: str = ""
    reason: str = ""
    """A reason that fits only this form (otherwise one is drawn for the segment)."""


FORMS: dict[str, tuple[Form, ...]] = {
    "Financial Performance & Financial Health": (
        Form(
            "profitability and cash flow",
            "For {period}, what were {co_s} revenue, operating margin and free cash flow, and how "
            "did each change from the prior year?",
            ("revenue", "operating margin", "free cash flow", "year-on-year change"),
            "fy",
            True,
        ),
        Form(
            "balance sheet and leverage",
            "Assess {co_s} balance sheet at the end of {period}: cash, total debt, net debt to "
            "EBITDA, current ratio and interest coverage.",
            ("cash", "total debt", "net debt to EBITDA", "current ratio", "interest coverage"),
            "fy",
        ),
        Form(
            "quarterly trend",
            "How did {co_s} gross margin, operating cash flow and capital expenditure develop in "
            "{period} compared with the same period a year earlier?",
            ("gross margin", "operating cash flow", "capital expenditure"),
            "quarter",
            True,
        ),
        Form(
            "liquidity",
            "What was {co_s} liquidity at the end of {period}: cash and equivalents, "
            "undrawn credit facilities and debt maturing within twelve months?",
            ("cash and equivalents", "undrawn facilities", "debt due within 12 months"),
            "quarter",
        ),
        Form(
            "credit check",
            "Run a credit check on {co} using {period} results: leverage, interest coverage, "
            "margins and any covenant or going-concern disclosures. Would you support a {line} "
            "credit line?",
            ("leverage", "interest coverage", "margins", "a recommendation"),
            "fy",
        ),
    ),
    "Peers & Competitive Positioning": (
        Form(
            "peer financial comparison",
            "Compare {co} with {p1} and {p2} on {period} revenue growth, operating margin and "
            "return on invested capital.",
            ("revenue growth", "operating margin", "ROIC", "for all three companies"),
            "fy",
            True,
        ),
        Form(
            "margin and R&D benchmark",
            "How do {co_s} {period} gross margin and R&D spending as a share of revenue "
            "compare with {p1_s}?",
            ("gross margin", "R&D as a share of revenue", "for both companies"),
            "fy",
            True,
        ),
        Form(
            "cash and leverage ranking",
            "Rank {co}, {p1} and {p2} by free cash flow margin and net debt to EBITDA for "
            "{period}.",
            ("free cash flow margin", "net debt to EBITDA", "a ranking"),
            "fy",
            True,
        ),
        Form(
            "market position",
            "In {market}, how did {co_s} market share and growth in {period} compare with {p1}?",
            ("market share", "growth", "for both companies"),
            "fy",
            True,
        ),
        Form(
            "working capital benchmark",
            "Benchmark {co} against {p1} on days sales outstanding and days payables outstanding "
            "for {period}.",
            ("DSO", "DPO", "for both companies"),
            "fy",
            True,
        ),
    ),
    "Product & Service Intelligence": (
        Form(
            "segment mix",
            "What share of {co_s} {period} revenue came from {seg_a} versus {seg_b}, and how "
            "did each grow?",
            ("revenue share by segment", "segment growth"),
            "fy",
            True,
        ),
        Form(
            "growth drivers",
            "Which products or services drove {co_s} revenue growth in {period}, and what did "
            "management say about pricing?",
            ("named growth drivers", "pricing commentary"),
            "quarter",
        ),
        Form(
            "segment profitability",
            "How large was {co_s} {seg_b} business in {period}, and how does its operating margin "
            "compare with {seg_a}?",
            ("segment revenue", "segment operating margin"),
            "fy",
            True,
        ),
    ),
    "Investor & Funding Landscape": (
        Form(
            "debt and ratings",
            "What debt did {co} issue or repay during {period}, and what are its current long-term "
            "credit ratings from S&P and Moody's?",
            ("debt issued or repaid", "S&P rating", "Moody's rating"),
            "fy",
        ),
        Form(
            "shareholder base",
            "Who were {co_s} five largest institutional shareholders in the 13F filings for "
            "{period}, and how concentrated is ownership?",
            ("top five holders", "ownership percentages"),
            "fixed",
            fixed_period="the quarter ended June 30, 2025",
        ),
        Form(
            "capital returns",
            "How much did {co} return to shareholders through dividends and buybacks in {period}, "
            "and how was it funded?",
            ("dividends", "buybacks", "funding source"),
            "fy",
        ),
    ),
    "Geographic & Governmental Insights": (
        Form(
            "regional exposure",
            "How much of {co_s} {period} revenue came from outside the United States, by region, "
            "and what tariff, sanctions or export-control risks did it disclose?",
            ("revenue by region", "disclosed trade risks"),
            "fy",
            False,
            True,
        ),
        Form(
            "manufacturing footprint",
            "Where are {co_s} main manufacturing or operating sites, and which government "
            "incentives or regulatory actions affected them in {period}?",
            ("main sites by country", "incentives or regulatory actions"),
            "fy",
            False,
            True,
        ),
    ),
}


def entity_performance_items(seed: int = SEED) -> list[Question]:
    """The research questions: one per (segment slot), companies and forms rotated with ``seed``."""
    rng = random.Random(seed)
    items: list[Question] = []
    for segment, total in SEGMENT_COUNTS.items():
        forms = FORMS[segment]
        pool = [c for c in COMPANIES if c.global_footprint] if _is_geo(segment) else list(COMPANIES)
        rng.shuffle(pool)
        used: set[tuple[str, str]] = set()
        for index in range(total):
            form = forms[index % len(forms)]
            company = _next_company(pool, form, used, index)
            items.append(_research_item(segment, form, company, index + 1, rng))
    return items


def _is_geo(segment: str) -> bool:
    return segment.startswith("Geographic")


def _next_company(pool: list[Company], form: Form, used: set, index: int) -> Company:
    for offset in range(len(pool)):
        company = pool[(index + offset) % len(pool)]
        if (company.name, form.key) not in used:
            used.add((company.name, form.key))
            return company
    raise ValueError(f"not enough companies for form {form.key!r}")


def _research_item(
    segment: str, form: Form, company: Company, number: int, rng: random.Random
) -> Question:
    period = {"fy": FY_PERIODS, "quarter": QUARTER_PERIODS}.get(form.period_kind)
    period_text = rng.choice(period) if period else form.fixed_period
    line = rng.choice(CREDIT_LINES)
    words = {
        "co": company.name,
        "co_s": possessive(company.name),
        "p1_s": possessive(company.peers[0]),
        "p1": company.peers[0],
        "p2": company.peers[1],
        "seg_a": company.segments[0],
        "seg_b": company.segments[1],
        "market": company.market,
        "period": period_text,
        "line": line,
    }
    reason = form.reason or rng.choice(REASONS[segment]).format(**words)
    query = f"{form.text.format(**words)} {reason}"
    query = query[0].upper() + query[1:]
    tags = build_tags(
        TaskType.entity_performance,
        scenario=form.key,
        period=period_text,
        comparison=form.comparison,
        global_context=form.global_context,
        metrics=form.metrics,
    )
    return Question(
        id=f"perf-{_slug(segment)}-{number:03d}",
        query=query,
        task_type=TaskType.entity_performance,
        segment=segment,
        scenario=form.key,
        tags=tags,
        metadata={"company": company.name, "period": period_text, "reason": reason},
    )


def possessive(name: str) -> str:
    return f"{name}'" if name.endswith("s") else f"{name}'s"


def _slug(text: str) -> str:
    words = [w for w in text.lower().replace("&", " ").split() if w]
    return "-".join(words[:2])


# --------------------------------------------------------------------------------------------------
# Business briefs
# --------------------------------------------------------------------------------------------------

BRIEF_REQUESTS: tuple[tuple[str, str, str], ...] = (
    ("Business Brief", "Caterpillar Inc.", "Business Brief report of {co}"),
    (
        "Business Brief",
        "Costco Wholesale Corporation",
        "Prepare a Business Brief on {co} for our quarterly account review.",
    ),
    ("Business Brief", "Deere & Company", "Business Brief report of {co}"),
    (
        "Business Brief",
        "FedEx Corporation",
        "I need a Business Brief on {co} before we renegotiate our shipping contract.",
    ),
    ("Business Brief", "Honeywell International Inc.", "Business Brief report of {co}"),
    ("Business Brief", "NVIDIA Corporation", "Business Brief report of {co}"),
    (
        "Business Brief",
        "Target Corporation",
        "Put together a Business Brief on {co}; they are a major customer of ours.",
    ),
    ("Business Brief", "Siemens AG", "Business Brief report of {co}"),
    ("Business Brief", "McKesson Corporation", "Business Brief report of {co}"),
    ("Company Overview", "The Home Depot, Inc.", "Company Overview report of {co}"),
    ("Company Overview", "Nestle S.A.", "Company Overview report of {co}"),
    (
        "Company Overview",
        "Oracle Corporation",
        "Give me a Company Overview of {co} ahead of our software renewal.",
    ),
    ("Company Overview", "Ford Motor Company", "Company Overview report of {co}"),
    ("Company Overview", "JPMorgan Chase & Co.", "Company Overview report of {co}"),
    ("Company Overview", "Salesforce, Inc.", "Company Overview report of {co}"),
    ("Company Overview", "Tesla, Inc.", "Company Overview report of {co}"),
    ("Corporate Profile", "3M Company", "Corporate Profile report of {co}"),
    ("Corporate Profile", "Toyota Motor Corporation", "Corporate Profile report of {co}"),
    (
        "Corporate Profile",
        "Accenture plc",
        "Write a Corporate Profile of {co} for our vendor onboarding file.",
    ),
    ("Corporate Profile", "Delta Air Lines, Inc.", "Corporate Profile report of {co}"),
    ("Executive Snapshot", "Walmart Inc.", "Executive Snapshot report of {co}"),
    ("Executive Snapshot", "Pfizer Inc.", "Executive Snapshot report of {co}"),
    (
        "Executive Snapshot",
        "Lowe's Companies, Inc.",
        "Our CFO meets {co} tomorrow: an Executive Snapshot, please.",
    ),
    ("Executive Snapshot", "United Parcel Service, Inc.", "Executive Snapshot report of {co}"),
    ("Highlights", "Intel Corporation", "Highlights report of {co}"),
    ("Highlights", "PepsiCo, Inc.", "Highlights report of {co}"),
    (
        "Highlights",
        "Marriott International, Inc.",
        "Highlights report of {co} for this week's leadership meeting.",
    ),
    # Trading partners that exist in the synthetic ERP (as customers or vendors in two legal
    # entities). Public data on them is thin, so these also test honesty about missing sections;
    # the AR/AP section is grounded in the ERP when built with --db.
    (
        "Business Brief",
        "Contoso Retail Partners",
        "Business Brief report of {co}, one of our customers",
    ),
    (
        "Company Overview",
        "Wide World Importers",
        "Company Overview report of {co}, one of our suppliers",
    ),
    (
        "Executive Snapshot",
        "Fabrikam Electronics",
        "Executive Snapshot report of {co} before our account review",
    ),
)


def business_brief_items(erp_names: dict[str, list[str]] | None = None) -> list[Question]:
    """The brief requests; ``erp_names`` maps a company name (lower case) to ERP record paths of
    customers/vendors with that name, which grounds the AR/AP section."""
    erp_names = erp_names or {}
    counters: dict[str, int] = {}
    items: list[Question] = []
    for kind, company, text in BRIEF_REQUESTS:
        counters[kind] = counters.get(kind, 0) + 1
        refs = _erp_refs(company, erp_names)
        items.append(
            Question(
                id=f"brief-{_slug(kind)}-{counters[kind]:03d}",
                query=text.format(co=company),
                task_type=TaskType.business_brief,
                segment=kind,
                scenario=kind,
                tags=build_tags(TaskType.business_brief, scenario=kind, erp_grounded=bool(refs)),
                record_refs=refs,
                metadata={"company": company, "erp_grounded": bool(refs)},
            )
        )
    return items


_SUFFIXES = (" inc.", " corporation", " company", " s.a.", " ag", " plc", ", inc.", " & co.")


def core_name(name: str) -> str:
    """Lower-case company name without its legal form, for matching against ERP parties."""
    text = name.lower().strip()
    changed = True
    while changed:
        changed = False
        for suffix in _SUFFIXES:
            if text.endswith(suffix):
                text = text[: -len(suffix)].rstrip(" ,")
                changed = True
    return text


def _erp_refs(company: str, erp_names: dict[str, list[str]]) -> list[str]:
    return sorted(erp_names.get(core_name(company), []))


def erp_party_paths(db_url: str) -> dict[str, list[str]]:
    """Core name -> record paths of the ERP's customers and vendors (for grounding briefs)."""
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from synthetic_erp import _schema as s
    from synthetic_erp._catalog import record_path
    from synthetic_erp._db import open_engine

    engine = open_engine(db_url, read_only=True)
    paths: dict[str, list[str]] = {}
    with Session(engine) as session:
        for set_name, table in (("customers", s.Customer), ("vendors", s.Vendor)):
            rows = session.execute(select(table.legal_entity, table.account, table.name))
            for le, account, name in rows:
                paths.setdefault(core_name(name), []).append(record_path(set_name, le, account))
    engine.dispose()
    return paths


def _snapshot_hash(db_url: str) -> str | None:
    from synthetic_erp._db import open_engine, read_meta

    engine = open_engine(db_url, read_only=True)
    try:
        return read_meta(engine).get("snapshot_hash")
    finally:
        engine.dispose()


def build_research_sets(out_dir: str | Path, db_url: str | None = None) -> list[Path]:
    """Write entity_performance_web.yaml and business_briefs_web.yaml into ``out_dir``."""
    out = Path(out_dir)
    performance = Dataset(
        header=DatasetHeader(
            name="entity_performance_web",
            description="Entity-performance research questions about real public companies, "
            "each with an explicit period and a reason for asking. Authored; no ERP truth.",
            generator_seed=SEED,
            rubric_version=RUBRIC_VERSION,
            created_by="python -m ledgerbench.dataset build-research",
        ),
        items=entity_performance_items(),
    )
    erp_names = erp_party_paths(db_url) if db_url else None
    brief_items = business_brief_items(erp_names)
    grounded = any(item.record_refs for item in brief_items)
    briefs = Dataset(
        header=DatasetHeader(
            name="business_briefs_web",
            description="Business-brief requests across the five request kinds, judged on "
            "section depth; the AR/AP section is grounded in the ERP where the company is a "
            "customer or vendor there.",
            erp_snapshot_hash=_snapshot_hash(db_url) if grounded and db_url else None,
            rubric_version=RUBRIC_VERSION,
            created_by="python -m ledgerbench.dataset build-research",
        ),
        items=brief_items,
    )
    return [
        write_dataset(performance, out / "entity_performance_web.yaml"),
        write_dataset(briefs, out / "business_briefs_web.yaml"),
    ]
