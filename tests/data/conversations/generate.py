#!/usr/bin/env python3
"""Generate the turn-level retrieval evaluation set in this folder.

Writes conversations.jsonl and questions.jsonl next to this script.
Deterministic (fixed seed, standard library only). Run from the repo root:

    python3 tests/data/conversations/generate.py

Every conversation is built from two personas, a set of "arcs" (life events,
hobbies, relatives, plans that change) whose steps are spread over the
sessions in time order, and filler small talk. Most sessions are topical: each
arc step there sits in an exchange of 5-12 turns about its subject, with talk
that reuses the subject's names and words around it. The other sessions mix
short arc steps with small talk. Arcs emit the questions whose evidence they
contain; some questions are then made to name the subject with a word found
in the turns around the evidence but not in the evidence itself. The script
checks the result before writing it.
"""
import json
import os
import random
import re
from datetime import date, datetime, timedelta

SEED = 20250304
HERE = os.path.dirname(os.path.abspath(__file__))
CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain")
MAX_SINGLE_HOP = 36     # per conversation, so that single-hop does not dominate
P_ITEM_Q = 0.9          # share of hobby item questions that reuse the evidence wording
P_SHORT = 0.35          # share of some steps in topical sessions where the other person
                        # names the subject and the answer turn does not

MONTHS = ["January", "February", "March", "April", "May", "June", "July",
          "August", "September", "October", "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
            "Saturday", "Sunday"]
NUM = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six",
       7: "seven", 8: "eight", 9: "nine", 10: "ten", 11: "eleven",
       12: "twelve"}


def ordinal(n):
    if 11 <= n % 100 <= 13:
        return "%dth" % n
    return "%d%s" % (n, {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th"))


def fdate(d):
    return "%d %s %d" % (d.day, MONTHS[d.month - 1], d.year)


def fmonth(d):
    return "%s %d" % (MONTHS[d.month - 1], d.year)


def fweekend(sat):
    sun = sat + timedelta(days=1)
    if sat.month == sun.month:
        return "the weekend of %d-%d %s %d" % (sat.day, sun.day,
                                               MONTHS[sat.month - 1], sat.year)
    return "the weekend of %s - %s" % (fdate(sat), fdate(sun))


def span(a, b):
    """Human description of the distance between two dates."""
    days = abs((b - a).days)
    if days < 14:
        return "%d days" % days
    if days < 60:
        return "about %d weeks" % round(days / 7)
    return "about %d months" % round(days / 30.4)


def cap(s):
    return s[:1].upper() + s[1:]


class When:
    """A time expression said on some day, the day it points at, the answer."""

    def __init__(self, phrase, day, answer, exact=True):
        self.phrase, self.day, self.answer, self.exact = phrase, day, answer, exact


def past(rng, d, kinds=("yesterday", "wd", "wd", "days", "weekend", "week"),
         after=None):
    """A relative expression for a day before d (and after `after`)."""
    for _ in range(40):
        w = _past(rng, d, rng.choice(kinds))
        if after is None or w.day > after:
            return w
    e = d - timedelta(days=1)
    return When("yesterday", e, fdate(e))


def _past(rng, d, kind):
    if kind == "weekend" and d.weekday() >= 4:
        kind = "wd"
    if kind == "yesterday":
        e = d - timedelta(days=1)
        return When("yesterday", e, fdate(e))
    if kind == "wd":
        e = d - timedelta(days=rng.randint(2, 6))
        form = rng.choice(["on %s", "last %s", "on %s", "this past %s"])
        return When(form % WEEKDAYS[e.weekday()], e, fdate(e))
    if kind == "days":
        n = rng.choice([2, 3, 4, 5])
        e = d - timedelta(days=n)
        return When("%s days ago" % NUM[n], e, fdate(e))
    if kind == "week":
        n = rng.choice([1, 2, 2, 3])
        e = d - timedelta(days=7 * n)
        ph = "a week ago" if n == 1 else "%s weeks ago" % NUM[n]
        return When(ph, e, "around %s (%s before %s)" % (fdate(e), ph[:-4], fdate(d)),
                    exact=False)
    if kind == "weekend":
        sat = d - timedelta(days=d.weekday() + 2)
        ph = rng.choice(["last weekend", "over the weekend", "at the weekend"])
        return When(ph, sat, fweekend(sat), exact=False)
    if kind == "month":
        first = (d.replace(day=1) - timedelta(days=1)).replace(day=1)
        return When("last month", first, fmonth(first), exact=False)
    raise ValueError(kind)


def future(rng, now, ev):
    """A natural expression, said on `now`, for the later day `ev`."""
    delta = (ev - now).days
    assert delta >= 1, (now, ev)
    if delta == 1:
        return When("tomorrow", ev, fdate(ev))
    if delta <= 4:
        form = rng.choice(["on %s", "this %s", "this coming %s"])
        return When(form % WEEKDAYS[ev.weekday()], ev, fdate(ev))
    if delta <= 6:
        form = rng.choice(["on %s", "next %s"])
        return When(form % WEEKDAYS[ev.weekday()], ev, fdate(ev))
    if ev.month == now.month:
        return When("on the %s" % ordinal(ev.day), ev, fdate(ev))
    if delta <= 45 and rng.random() < 0.6:
        return When("on the %s of %s" % (ordinal(ev.day), MONTHS[ev.month - 1]),
                    ev, fdate(ev))
    return When("in %s" % MONTHS[ev.month - 1], ev, fmonth(ev), exact=False)


# --------------------------------------------------------------------------
# People and places

NAMES_F = ["Aisha", "Beatriz", "Chiara", "Dana", "Freya", "Greta", "Hana",
           "Imani", "Jia", "Keiko", "Leila", "Maja", "Noor", "Olga", "Paloma",
           "Rosa", "Saanvi", "Tamsin", "Uma", "Valentina", "Wanjiru",
           "Ximena", "Yara", "Zofia", "Ines", "Gemma", "Marisol", "Nkechi",
           "Astrid", "Farah", "Carmen", "Bronwyn", "Kiri", "Mariam",
           "Sunita", "Thandiwe", "Ottilie", "Renata", "Pilar", "Svetlana",
           "Ngozi", "Harriet", "Lotte", "Esi"]
NAMES_M = ["Bruno", "Carlos", "Dmitri", "Eamon", "Felipe", "Gustav", "Hamid",
           "Ivan", "Jamal", "Kai", "Luca", "Malik", "Nikolai", "Oskar",
           "Pablo", "Quentin", "Rafael", "Stefan", "Tariq", "Umar", "Viktor",
           "Xavier", "Yannick", "Zoltan", "Ahmed", "Benedikt", "Callum",
           "Dario", "Emil", "Faisal", "Gareth", "Hugo", "Ibrahim", "Jonas",
           "Lorenzo", "Marek", "Nasser", "Obi", "Piotr", "Ravi", "Santiago",
           "Vusi", "Wojtek", "Anders"]

CITY_HOODS = {
    "Leeds": ["Headingley", "Chapel Allerton", "Meanwood", "Roundhay", "Kirkstall", "Armley"],
    "Manchester": ["Ancoats", "Chorlton", "Didsbury", "Levenshulme", "Withington", "Salford Quays"],
    "Lagos": ["Yaba", "Surulere", "Ikeja GRA", "Lekki", "Gbagada", "Ikoyi"],
    "Osaka": ["Tennoji", "Namba", "Kitahama", "Nakazakicho", "Abeno", "Fukushima"],
    "Buenos Aires": ["Palermo", "San Telmo", "Belgrano", "Caballito", "Villa Crespo", "Almagro"],
    "Dublin": ["Phibsborough", "Rathmines", "Stoneybatter", "Drumcondra", "Ranelagh", "Clontarf"],
    "Toronto": ["Leslieville", "the Annex", "Roncesvalles", "the Danforth", "Kensington Market", "Junction Triangle"],
    "London": ["Peckham", "Walthamstow", "Brixton", "Hackney Wick", "Lewisham", "Tooting"],
    "Gothenburg": ["Majorna", "Haga", "Johanneberg", "Masthugget", "Lindholmen", "Guldheden"],
    "Marseille": ["Cours Julien", "Le Panier", "Endoume", "La Plaine", "Vauban", "Saint-Victor"],
    "Auckland": ["Grey Lynn", "Ponsonby", "Mount Eden", "Devonport", "Kingsland", "Onehunga"],
    "Mexico City": ["Coyoacan", "Roma Norte", "Condesa", "San Angel", "Narvarte", "Juarez"],
    "Oslo": ["Grunerlokka", "Frogner", "Toyen", "Sagene", "Majorstuen", "Bjolsen"],
    "Bangalore": ["Indiranagar", "Koramangala", "Jayanagar", "Malleswaram", "HSR Layout", "Whitefield"],
    "Istanbul": ["Kadikoy", "Moda", "Besiktas", "Cihangir", "Uskudar", "Balat"],
    "Berlin": ["Kreuzberg", "Neukolln", "Pankow", "Friedrichshain", "Moabit", "Schoneberg"],
    "Montreal": ["the Plateau", "Mile End", "Verdun", "Rosemont", "Saint-Henri", "Outremont"],
    "Seoul": ["Mapo", "Seongsu", "Yeonnam", "Itaewon", "Mangwon", "Hapjeong"],
    "Melbourne": ["Brunswick", "Fitzroy", "Carlton", "St Kilda", "Footscray", "Northcote"],
    "Lima": ["Miraflores", "Barranco", "San Isidro", "Surco", "Jesus Maria", "Lince"],
    "Amsterdam": ["De Pijp", "the Jordaan", "Oost", "Noord", "Westerpark", "Oud-West"],
    "Chicago": ["Pilsen", "Logan Square", "Hyde Park", "Andersonville", "Bridgeport", "Wicker Park"],
    "Edinburgh": ["Leith", "Marchmont", "Stockbridge", "Portobello", "Bruntsfield", "Morningside"],
    "Accra": ["Osu", "Labone", "East Legon", "Cantonments", "Dzorwulu", "Airport Residential"],
}
FAR_CITIES = ["Singapore", "Vancouver", "Dubai", "Nairobi", "Copenhagen",
              "Sydney", "Boston", "Rotterdam", "Sao Paulo", "Hong Kong",
              "Cape Town", "Vienna"]


class Person:
    def __init__(self, name, g, city, hood, job, company, boss, sib_rel, sib,
                 partner, kid, hobbies, coworker, friend):
        self.name, self.g, self.city, self.hood = name, g, city, hood
        self.job, self.company, self.boss = job, company, boss
        self.sib_rel, self.sib, self.partner = sib_rel, sib, partner
        self.kid = kid            # (name, "son"/"daughter", age) or None
        self.hobbies = hobbies    # (long-standing hobby, hobby taken up during the chats)
        self.coworker, self.friend = coworker, friend
        f = g == "f"
        self.subj, self.obj, self.pos = ("she", "her", "her") if f else ("he", "him", "his")
        self.refl = "herself" if f else "himself"
        self.sib_g = "f" if sib_rel == "sister" else "m"
        self.pet = None           # set when a pet is adopted

    def slots(self):
        return dict(S=self.name, subj=self.subj, Subj=cap(self.subj), obj=self.obj,
                    pos=self.pos, Pos=cap(self.pos), refl=self.refl)


def P(*a):
    return Person(*a)


PAIRS = [
    (P("Priya", "f", "Leeds", "Headingley", "UX designer", "Northgate Health", "Graham", "sister", "Anjali", "Sam", None, ("running", "pottery"), "Becky", "Ollie"),
     P("Tomas", "m", "Manchester", "Ancoats", "physics teacher", "Hulme Park Academy", "Mrs Okafor", "brother", "Jakub", None, None, ("chess", "cello"), "Dev", "Marta")),
    (P("Amara", "f", "Lagos", "Yaba", "software engineer", "Kora Pay", "Tunde", "brother", "Chidi", "Emeka", None, ("photography", "climbing"), "Bolaji", "Funmi"),
     P("Kenji", "m", "Osaka", "Tennoji", "architect", "Hoshino Design", "Mr Hoshino", "sister", "Yui", "Aiko", ("Haru", "son", 7), ("cycling", "baking"), "Takeshi", "Daisuke")),
    (P("Sofia", "f", "Buenos Aires", "Palermo", "vet", "Clinica Belgrano", "Dr Paz", "brother", "Martin", "Lucas", None, ("painting", "swimming"), "Florencia", "Agustina"),
     P("Declan", "m", "Dublin", "Phibsborough", "journalist", "The Liffey Post", "Siobhan", "sister", "Aoife", None, None, ("guitar", "climbing"), "Ciaran", "Niamh")),
    (P("Mei", "f", "Toronto", "Leslieville", "accountant", "Harbourview Partners", "Richard", "brother", "Wei", "Jon", ("Lily", "daughter", 9), ("knitting", "gardening"), "Priyanka", "Shauna"),
     P("Femi", "m", "London", "Peckham", "nurse", "St Aldric's Hospital", "Janet", "sister", "Bisi", None, None, ("running", "chess"), "Kwesi", "Tolu")),
    (P("Lars", "m", "Gothenburg", "Majorna", "marine biologist", "the West Coast Marine Institute", "Karin", "sister", "Elsa", "Johan", None, ("swimming", "cello"), "Nils", "Mikael"),
     P("Fatima", "f", "Marseille", "Cours Julien", "pharmacist", "Pharmacie du Vieux-Port", "Monsieur Garnier", "brother", "Karim", "Youssef", ("Yanis", "son", 6), ("gardening", "painting"), "Sandrine", "Leila")),
    (P("Aroha", "f", "Auckland", "Grey Lynn", "primary school teacher", "Westmere School", "Mr Tait", "brother", "Wiremu", "Hemi", ("Mere", "daughter", 8), ("gardening", "guitar"), "Jess", "Tui"),
     P("Mateo", "m", "Mexico City", "Coyoacan", "chef", "Fonda Azul", "Don Ernesto", "sister", "Valeria", None, None, ("cycling", "photography"), "Chuy", "Paco")),
    (P("Ingrid", "f", "Oslo", "Grunerlokka", "civil engineer", "Fjordbro Consulting", "Per", "brother", "Henrik", None, None, ("climbing", "baking"), "Silje", "Kari"),
     P("Rahul", "m", "Bangalore", "Indiranagar", "data analyst", "Tessera Analytics", "Meera", "sister", "Kavya", "Neha", ("Arjun", "son", 8), ("chess", "painting"), "Vikram", "Sid")),
    (P("Yusuf", "m", "Istanbul", "Kadikoy", "dentist", "Moda Dental", "Dr Aydin", "brother", "Emre", None, None, ("photography", "swimming"), "Selin", "Burak"),
     P("Hannah", "f", "Berlin", "Kreuzberg", "museum curator", "Haus der Dinge", "Dr Weber", "sister", "Lena", "Jonas", None, ("pottery", "cycling"), "Katrin", "Mia")),
    (P("Camille", "f", "Montreal", "the Plateau", "translator", "Lexica Translations", "Josee", "brother", "Antoine", "Theo", None, ("knitting", "running"), "Genevieve", "Marc"),
     P("Joon-ho", "m", "Seoul", "Mapo", "game developer", "Blue Hare Studio", "Director Kim", "sister", "Min-ji", None, None, ("guitar", "baking"), "Sung-min", "Hyun")),
    (P("Nadia", "f", "Melbourne", "Brunswick", "paramedic", "Metro Ambulance", "Craig", "brother", "Sami", "Rami", ("Zain", "son", 10), ("swimming", "pottery"), "Tegan", "Lou"),
     P("Diego", "m", "Lima", "Miraflores", "lawyer", "Castro & Vega", "Dr Vega", "sister", "Lucia", None, None, ("running", "guitar"), "Renzo", "Andres")),
    (P("Elif", "f", "Amsterdam", "De Pijp", "physiotherapist", "Amstel Physio", "Marloes", "brother", "Can", None, None, ("cello", "knitting"), "Sanne", "Deniz"),
     P("Marcus", "m", "Chicago", "Pilsen", "electrician", "Lakeshore Electric", "Dave", "sister", "Tasha", "Keisha", ("Maya", "daughter", 11), ("gardening", "chess"), "Luis", "Terrell")),
    (P("Anya", "f", "Edinburgh", "Leith", "librarian", "Leith Library", "Moira", "sister", "Dasha", None, None, ("chess", "pottery"), "Fiona", "Isla"),
     P("Kwame", "m", "Accra", "Osu", "agronomist", "GreenFields Ghana", "Mr Boateng", "brother", "Kofi", "Efua", ("Ama", "daughter", 5), ("photography", "gardening"), "Yaw", "Kojo")),
]


# --------------------------------------------------------------------------
# Hobbies. Lines are said by the hobby's owner; {venue}, {coach}, {cpro}
# (coach pronoun), {rel}/{when} (time expressions), {n} are filled in.

HOBBIES = {
    "running": dict(
        noun="running", qn=["jogging", "running", "distance running"],
        venues=["the Riverside Runners", "Parkside Striders", "the Canal Harriers"],
        start=["Joined a beginners' group, {venue}, {rel}. I was wheezing after four minutes.",
               "So I've started running. Like, actually. First session with {venue} was {rel}."],
        start_q=["When did {S} take up jogging?", "When did {S} first go out with a running group?",
                 "When did {S} start running?"],
        since=["Can't believe I've been with {venue} for {n} years now. Same Tuesday loop every week.",
               "I've been running since uni, so about {n} years. It keeps me sane."],
        coach_kind=["running coach", "trainer", "coach"],
        coach_prompt=["Is there a coach or do you all just go?", "Who runs the group?"],
        coach=["{coach} coaches us. {Cpro} ran for the national team decades ago and still beats everyone up hills.",
               "{coach}. Very nice, but {cpro} has a whistle and absolutely no mercy."],
        gear=[("Bought proper shoes finally, bright orange ones with a ridiculous name.", "bright orange running shoes"),
              ("Treated myself to a GPS watch, now I know exactly how slow I am.", "a GPS watch"),
              ("Got a head torch so I can still go out after work now it's dark by five.", "a head torch")],
        gear_q=["What did {S} buy for {pos} {qn}?", "What new kit did {S} get?", "What did {S} treat {refl} to?"],
        made_prompt=["How's the training going?", "Any progress?", "Still going out every week?"],
        made=[("Ran the whole way round the reservoir without stopping. Eight kilometres!", "ran eight kilometres round the reservoir without stopping", None),
              ("New personal best on the 5k, twenty-six minutes flat.", "a 5k personal best of 26 minutes", "a screenshot of a watch showing 26:00 for 5.0 km"),
              ("Got up the big hill on the Sunday route without walking. Small wins.", "ran up the big hill on the Sunday route without walking", None)],
        made_q=["What milestone did {S} reach with {pos} {qn}?", "What running achievement did {S} share?",
                "What did {S} manage for the first time?"],
        setback=[("Shin splints. So now it's boring stretches instead.", "shin splints"),
                 ("Lost a toenail. I'll spare you the photo.", "lost a toenail"),
                 ("A dog chased me for half a kilometre along the canal. Never been faster.", "was chased by a dog along the canal")],
        setback_q=["What happened to {S} while training?", "What problem did {S} have with {pos} {qn}?"],
        events=[dict(name="the half marathon", eq=["the half marathon", "the 21-kilometre race", "the long race"],
                     results=[("Two hours eleven and I didn't walk once.", "finished in 2 hours 11 minutes without walking"),
                              ("Cramped at mile ten but crawled over the line in 2:24.", "finished in 2:24 despite cramp at mile ten")]),
                dict(name="the charity 10k", eq=["the charity run", "the 10k", "the fundraising race"],
                     results=[("Fifty-four minutes and raised three hundred for the hospice.", "54 minutes, raising 300 for the hospice"),
                              ("I ran it dressed as a banana. Time irrelevant.", "ran it dressed as a banana")])],
        od=[("Would {S} likely enjoy a hiking holiday?", "Probably yes; {subj} runs regularly and enjoys being active outdoors."),
            ("Would a fitness tracker be a sensible present for {S}?", "Yes; {subj} runs regularly and cares about {pos} times.")],
        mention=["Went for a run before work, it was freezing.", "Legs like concrete on my run this week.",
                 "Skipped running this week, no energy at all."],
    ),
    "pottery": dict(
        noun="pottery", qn=["ceramics", "pottery", "clay work"],
        venues=["Clayworks", "the Kiln Room", "Muddy Hands Studio", "Wheelhouse Ceramics"],
        start=["Okay, I finally did it: signed up for the wheel-throwing course at {venue}. First class was {rel}!",
               "Started evening classes at {venue} {rel}. Two hours of getting clay in my hair and I made nothing. Loved it."],
        start_q=["When did {S} begin learning ceramics?", "When did {S} take {pos} first pottery class?",
                 "When did {S} start throwing clay on a wheel?"],
        since=["I've been potting at {venue} for {n} years now, it's basically my second home.",
               "It's been {n} years since I first sat at a wheel, can you believe it."],
        coach_kind=["ceramics teacher", "instructor", "teacher"],
        coach_prompt=["Who's teaching it?", "Is the teacher any good?"],
        coach=["{coach} runs it. {Cpro} used to make tableware for a factory, so {cpro} is ridiculously precise.",
               "{coach}, and {cpro}'s very calm. Never raises {cpos} voice even when someone's bowl collapses."],
        gear=[("I caved and bought my own trimming kit, the studio one is all blunt.", "a trimming kit"),
              ("Found a secondhand kick wheel on Marketplace for next to nothing. It weighs a ton.", "a secondhand kick wheel"),
              ("Got myself a proper canvas apron, I was ruining all my jeans.", "a canvas apron")],
        gear_q=["What did {S} buy for {pos} {qn}?", "What equipment did {S} get for the studio?"],
        made_prompt=["Made anything nice lately?", "Show me what you've been making!", "So what's come out of the kiln?"],
        made=[("Finally a teapot where the lid actually fits!", "a teapot with a lid that fits", "a photo of a speckled grey teapot on a workbench"),
              ("Four espresso cups. A bit wonky, but they hold coffee.", "four espresso cups", "a photo of four small lopsided cups"),
              ("A big blue serving bowl. My mum already claimed it.", "a big blue serving bowl", "a photo of a wide blue glazed bowl"),
              ("A little planter shaped like a hedgehog. Don't judge.", "a hedgehog-shaped planter", None)],
        made_q=["What did {S} make in {pos} {qn} class?", "What piece did {S} finish that {subj} was proud of?",
                "What came out of the kiln for {S}?"],
        setback=[("Half my pieces cracked in the kiln this week. Someone didn't dry theirs properly and it went everywhere.", "several pieces cracked in the kiln"),
                 ("The glaze ran on my best bowl and glued it to the kiln shelf.", "the glaze ran and glued a bowl to the kiln shelf"),
                 ("I've strained my wrist from centring too hard, so I'm off the wheel for a bit.", "a wrist strain from centring clay")],
        setback_q=["What went wrong with {S}'s {qn} recently?", "What problem did {S} have at the studio?"],
        events=[dict(name="the studio's seconds sale", eq=["the studio sale", "the ceramics sale", "the pottery market"],
                     results=[("Sold eleven mugs and a vase. I'm rich (I'm not).", "sold eleven mugs and a vase"),
                              ("Sold almost nothing, but a lady bought my wonky teapot, which made my day.", "sold only a wonky teapot")]),
                dict(name="the student exhibition", eq=["the student show", "the ceramics exhibition"],
                     results=[("They put my bowl in the window! The actual window!", "a bowl was displayed in the window"),
                              ("My vase fell off its plinth during the opening. Glued it back. Nobody knows.", "a vase fell off its plinth and was glued back")])],
        od=[("Would {S} likely appreciate a voucher for a ceramics supply shop?", "Yes, probably; {subj} does pottery regularly and buys {pos} own kit."),
            ("Could {S} plausibly sell handmade mugs at a craft market?", "Plausibly yes; {subj} makes pieces in {pos} pottery classes and they have sold or been shown.")],
        mention=["Pottery was quiet this week, just trimming.", "Got clay under my nails again, it never comes out.",
                 "The studio was freezing this week, the heater's broken."],
    ),
    "chess": dict(
        noun="chess", qn=["chess", "competitive chess", "club chess"],
        venues=["the Black Knight club", "the Castle Arms club", "the Thursday club at the library"],
        start=["Went along to {venue} {rel}. Got absolutely destroyed by a twelve-year-old.",
               "I joined {venue} {rel}! Proper clocks and everything, very intimidating."],
        start_q=["When did {S} join a chess club?", "When did {S} start playing chess competitively?",
                 "When did {S} first play at a club with clocks?"],
        since=["I've played at {venue} for {n} years, I'm part of the furniture at this point.",
               "Been playing seriously for about {n} years now, since a friend dragged me to a tournament."],
        coach_kind=["chess mentor", "teacher", "coach"],
        coach_prompt=["Does anyone teach you there?", "Is there a coach?"],
        coach=["There's an old regular, {coach}, who gives free lessons. {Cpro} was a champion back in the eighties.",
               "{coach} runs the beginners' table. {Cpro} explains openings like bedtime stories."],
        gear=[("Bought a proper wooden set with weighted pieces, so satisfying to slam them down.", "a wooden set with weighted pieces"),
              ("Got a digital clock so I can practise blitz at home.", "a digital chess clock"),
              ("Ordered a huge book on endgames. It's like a brick.", "a book on endgames")],
        gear_q=["What did {S} buy for {pos} {qn}?", "What did {S} order for practising at home?"],
        made_prompt=["How's the club going?", "Winning anything?", "Any good games lately?"],
        made=[("Beat the club captain for the first time! He resigned after thirty moves.", "beat the club captain", None),
              ("My online rating went past 1500.", "an online rating above 1500", "a screenshot of a rating graph crossing 1500"),
              ("Won with a queen sacrifice, I've been replaying it all week.", "won a game with a queen sacrifice", None)],
        made_q=["What win was {S} proud of?", "What milestone did {S} hit at the board?",
                "What did {S} accomplish at chess?"],
        setback=[("Lost five in a row. I think I've forgotten how the horse moves.", "a five-game losing streak"),
                 ("Left my queen hanging in the league match and we lost by half a point. Because of me.", "blundered a queen and cost the team a league match"),
                 ("Got told off for eating crisps during a tournament game.", "was told off for eating crisps during a game")],
        setback_q=["What went badly for {S} at {qn}?", "What setback did {S} have over the board?"],
        events=[dict(name="the regional rapid tournament", eq=["the rapid tournament", "the regional competition"],
                     results=[("Four out of six! Third in my section.", "third in the section with 4 out of 6"),
                              ("Two and a half out of six. Middle of the pack, but fun.", "2.5 out of 6, mid-table")]),
                dict(name="the club championship", eq=["the club championship", "the club final"],
                     results=[("I won it! Tiebreak, but a win is a win.", "won on tiebreak"),
                              ("Lost the last round on time with a winning position. Still annoyed.", "lost the last round on time")])],
        od=[("Would {S} enjoy a strategy board game night?", "Likely yes; {subj} plays chess regularly at a club."),
            ("Is {S} likely to enjoy planning several steps ahead?", "Probably; {subj} plays serious chess and studies theory.")],
        mention=["Played some online chess at lunch, lost every game.", "Chess club was half empty this week.",
                 "Watched a chess stream until 1am, not my finest decision."],
    ),
    "cello": dict(
        noun="cello", qn=["cello", "cello playing", "string playing"],
        venues=["the community orchestra", "the Wednesday strings group", "the music school on Park Road"],
        start=["Finally bought a secondhand cello and had my first lesson {rel}!",
               "Had my first ever cello lesson {rel}. My fingertips are ruined."],
        start_q=["When did {S} begin learning a string instrument?", "When did {S} have {pos} first cello lesson?",
                 "When did {S} take up music lessons?"],
        since=["I've played in {venue} for {n} years now, back desk of the cellos.",
               "I've had the cello for {n} years, since my grandmother left it to me."],
        coach_kind=["cello teacher", "music teacher", "teacher"],
        coach_prompt=["Who teaches you?", "Is your teacher nice?"],
        coach=["My teacher is {coach}. {Cpro} plays in the city orchestra and has the patience of a saint.",
               "{coach}, who's about seventy and tells me off for slouching."],
        gear=[("Bought a new bow. Apparently that's a big deal, it cost more than my bike.", "a new bow"),
              ("Got a proper hard case, no more carrying it around in the floppy bag.", "a hard case"),
              ("Finally bought a folding music stand instead of propping the book on the shelf.", "a folding music stand")],
        gear_q=["What did {S} buy for {pos} instrument?", "What did {S} get for practising?"],
        made_prompt=["How's the practising going?", "Can you play anything yet?", "What are you working on?"],
        made=[("I can play the prelude from the first Bach suite! Slowly, but all of it.", "the prelude from Bach's first cello suite", None),
              ("Played The Swan for my mum over video. She cried, though possibly because of the tuning.", "played The Swan for {pos} mum", None),
              ("Got through my grade three exam with a merit.", "passed grade three with a merit", "a photo of an exam certificate on a fridge")],
        made_q=["What piece or milestone did {S} reach with {pos} instrument?", "What can {S} now play?",
                "What musical achievement did {S} mention?"],
        setback=[("Snapped my A string mid-lesson and it whipped me in the face.", "an A string snapped mid-lesson"),
                 ("The neighbour complained, so now I practise with a mute and it sounds like a sad bee.", "a neighbour complained about the practice"),
                 ("Found a crack in the body, had to take it to the luthier.", "found a crack and took it to a luthier")],
        setback_q=["What went wrong with {S}'s instrument or practice?", "What problem did {S} have with {pos} cello?"],
        events=[dict(name="the end-of-term concert", eq=["the end-of-term concert", "the orchestra concert"],
                     results=[("Standing ovation! Well, two people stood up.", "a small standing ovation"),
                              ("I came in a bar early in the second piece and nobody noticed. I think.", "came in a bar early but nobody noticed")]),
                dict(name="the student recital", eq=["the recital", "the student performance"],
                     results=[("Played my piece all the way through without stopping!", "played the piece through without stopping"),
                              ("My hands were shaking so much the bow bounced. People were kind.", "shaky bow, but people were kind")])],
        od=[("Would {S} likely enjoy a classical music concert?", "Yes, likely; {subj} plays the cello and performs."),
            ("Can {S} probably read sheet music?", "Yes, most likely; {subj} takes cello lessons and plays set pieces.")],
        mention=["Only practised twice this week, the cello is judging me.", "Tuned the cello and the peg slipped again.",
                 "Orchestra rehearsal ran late again."],
    ),
    "photography": dict(
        noun="photography", qn=["photography", "camera work", "photography"],
        venues=["the Lightbox camera club", "the Tuesday photo-walk group", "the darkroom at the arts centre"],
        start=["Bought an old film camera and went on my first photo walk with {venue} {rel}.",
               "I've joined {venue}! First outing was {rel}, we shot the docks at sunrise."],
        start_q=["When did {S} take up photography?", "When did {S} go on {pos} first photo walk?",
                 "When did {S} join a camera club?"],
        since=["I've been shooting with {venue} for {n} years now.",
               "Photography's been my thing for about {n} years, since I inherited my dad's old camera."],
        coach_kind=["photography mentor", "club leader", "teacher"],
        coach_prompt=["Who runs it?", "Is there someone teaching you?"],
        coach=["{coach} runs it. {Cpro} used to shoot weddings and can spot a wonky horizon from a mile off.",
               "{coach}, who only ever shoots black and white and is very smug about it."],
        gear=[("Bought a 50mm prime lens, everything looks dreamy now.", "a 50mm prime lens"),
              ("Got a tripod, a proper one, not the wobbly thing I had.", "a sturdy tripod"),
              ("Bought a secondhand medium format camera. It's enormous.", "a secondhand medium-format camera")],
        gear_q=["What did {S} buy for {pos} {qn}?", "What new equipment did {S} get?"],
        made_prompt=["Taken anything good lately?", "Show me something!", "What have you been shooting?"],
        made=[("One of mine got picked as photo of the month at the club!", "a photo chosen as photo of the month", "a photo of a heron standing in misty water"),
              ("Printed a whole series of market stall portraits, they look amazing on the wall.", "a series of market-stall portraits", "a photo of framed portraits on a hallway wall"),
              ("Got lightning over the harbour. Pure luck.", "a shot of lightning over the harbour", "a photo of a lightning bolt over a harbour")],
        made_q=["What photo success did {S} have?", "What did {S} capture or print that {subj} was proud of?",
                "What was {S}'s best shot recently?"],
        setback=[("Dropped my camera in the sea. It did not survive.", "dropped the camera in the sea"),
                 ("Lost a whole memory card from the weekend, corrupted.", "a corrupted memory card"),
                 ("Got shouted at by a man for photographing his very photogenic vintage car.", "was shouted at for photographing someone's car")],
        setback_q=["What went wrong for {S}'s {qn}?", "What mishap did {S} have with {pos} camera?"],
        events=[dict(name="the club exhibition", eq=["the club exhibition", "the photo show"],
                     results=[("Sold two prints! To strangers!", "sold two prints to strangers"),
                              ("My print was hung right next to the toilets, but people still looked.", "the print was hung next to the toilets")]),
                dict(name="the city photo competition", eq=["the photography contest", "the city competition"],
                     results=[("Highly commended! Not a win, but I'll take it.", "highly commended"),
                              ("Didn't place, but the judge wrote a lovely note on the back.", "did not place but got a nice note from the judge")])],
        od=[("Would {S} likely enjoy a trip to see the northern lights?", "Likely yes; {subj} is a keen photographer who chases dramatic light."),
            ("Would a camera bag be a good gift for {S}?", "Yes; photography is one of {pos} main hobbies.")],
        mention=["Took the camera out but the light was flat, nothing good.", "Spent all evening editing photos instead of sleeping.",
                 "Photo walk got rained off this week."],
    ),
    "climbing": dict(
        noun="climbing", qn=["bouldering", "climbing", "wall climbing"],
        venues=["the Arch", "Boulder Barn", "Crux Climbing", "the wall at Kingsway"],
        start=["Tried bouldering at {venue} {rel}. My forearms are still screaming.",
               "Started climbing! Went to an intro session at {venue} {rel}."],
        start_q=["When did {S} take up bouldering?", "When did {S} have {pos} first climbing session?",
                 "When did {S} start climbing?"],
        since=["I've been climbing at {venue} for {n} years now, I know every hold by name.",
               "About {n} years of climbing now and I'm still scared of the top-outs."],
        coach_kind=["climbing instructor", "coach", "instructor"],
        coach_prompt=["Did someone show you the ropes?", "Who's teaching you?"],
        coach=["{coach} runs the intro course. {Cpro} moves like a lizard, honestly.",
               "{coach}, who set half the problems there and laughs when we fall off them."],
        gear=[("Bought my own shoes! Two sizes too small, which is apparently correct.", "climbing shoes two sizes too small"),
              ("Got a chalk bag shaped like a taco.", "a taco-shaped chalk bag"),
              ("Bought a harness so I can start doing ropes.", "a harness")],
        gear_q=["What did {S} buy for {pos} {qn}?", "What new gear did {S} get for the wall?"],
        made_prompt=["Still going to the wall?", "Sent anything hard?", "How's the climbing?"],
        made=[("Sent my first V4! Three weeks of falling off the last move.", "a V4 problem", None),
              ("Did the orange overhang in the back room, the one I've been stuck on forever.", "the orange overhang route", "a photo of a steep wall with orange holds"),
              ("Led my first route outdoors, fifteen metres of pure fear.", "led a fifteen-metre route outdoors", None)],
        made_q=["What climb did {S} finally complete?", "What was {S}'s latest achievement on the wall?",
                "What route or problem did {S} manage?"],
        setback=[("Tore a finger pulley. No crimpy holds for a month.", "a torn finger pulley"),
                 ("Split my fingertip on a sharp hold, blood everywhere.", "split a fingertip on a sharp hold"),
                 ("Someone walked under me as I fell, we both ended up on the mat.", "fell onto someone walking under the wall")],
        setback_q=["What injury or mishap did {S} have {qn}?", "What went wrong for {S} at the wall?"],
        events=[dict(name="the beginners' bouldering comp", eq=["the bouldering competition", "the climbing comp"],
                     results=[("Fourth out of thirty in my category!", "fourth out of thirty"),
                              ("Topped two problems out of eight, but the pizza after was great.", "topped two of eight problems")]),
                dict(name="the outdoor crag day", eq=["the outdoor climbing day", "the day at the crags"],
                     results=[("Climbed three routes on real rock and didn't cry.", "climbed three outdoor routes"),
                              ("It rained after an hour so we mostly ate sandwiches under a rock.", "rained off after an hour")])],
        od=[("Is {S} likely to be afraid of heights?", "Probably not; {subj} climbs regularly."),
            ("Would {S} enjoy a mountain holiday with scrambling?", "Likely yes; {subj} is a keen climber.")],
        mention=["The wall was rammed this week, couldn't get on anything.", "Forearms still sore from climbing.",
                 "They reset all the problems at the wall, everything's new."],
    ),
    "cycling": dict(
        noun="cycling", qn=["cycling", "bike riding", "road cycling"],
        venues=["the Velo Club", "the Sunday club ride", "the Wheelers"],
        start=["Bought a road bike and did my first group ride with {venue} {rel}.",
               "Joined {venue} {rel}. Forty kilometres, I thought I was going to die."],
        start_q=["When did {S} take up road cycling?", "When did {S} do {pos} first group ride?",
                 "When did {S} start riding with a club?"],
        since=["I've been riding with {venue} for {n} years, every Sunday at seven.",
               "{n} years on the bike now and I still can't fix a puncture quickly."],
        coach_kind=["ride leader", "cycling coach", "coach"],
        coach_prompt=["Who leads the rides?", "Is there a coach?"],
        coach=["{coach} leads it. {Cpro} shouts 'car back!' like a drill sergeant.",
               "{coach}, who's sixty-five and drops all of us on the climbs."],
        gear=[("Got clip-in pedals. Already fell over at a traffic light.", "clip-in pedals"),
              ("Bought a bike computer, now I'm obsessed with my average speed.", "a bike computer"),
              ("New waterproof jacket, bright yellow, I look like a highlighter.", "a bright yellow waterproof jacket")],
        gear_q=["What did {S} buy for {pos} {qn}?", "What new kit did {S} get for the bike?"],
        made_prompt=["Been out on the bike much?", "How far are you riding these days?", "Any big rides?"],
        made=[("Did my first hundred-kilometre ride!", "a 100 km ride", "a screenshot of a route map showing 100.4 km"),
              ("Got up the big climb out of town without stopping.", "climbed the big hill out of town without stopping", None),
              ("Rode all the way to the coast and got the train back.", "rode to the coast", "a photo of a bike leaning on a sea wall")],
        made_q=["What riding milestone did {S} reach?", "What long or hard ride did {S} complete?",
                "What did {S} achieve on {pos} bike?"],
        setback=[("Three punctures in one ride. Three!", "three punctures in one ride"),
                 ("Someone nicked my saddle outside the supermarket.", "the saddle was stolen"),
                 ("Chain snapped halfway up a hill.", "the chain snapped on a hill")],
        setback_q=["What went wrong for {S} with {pos} bike?", "What problem did {S} have while cycling?"],
        events=[dict(name="the charity sportive", eq=["the charity ride", "the sportive"],
                     results=[("Finished the 80k route in just under four hours.", "80 km in just under four hours"),
                              ("Did the short route because of the wind. No regrets.", "did the short route because of the wind")]),
                dict(name="the midnight ride", eq=["the night ride", "the overnight ride"],
                     results=[("Rode through the night and had breakfast at the seaside at 6am.", "rode overnight and had breakfast by the sea"),
                              ("Bailed at 2am, too cold. Train home in shame.", "gave up at 2am because of the cold")])],
        od=[("Would {S} likely enjoy a cycling holiday?", "Probably yes; {subj} rides with a club and does long rides."),
            ("Is {S} likely to care about bike lanes in the city?", "Likely yes; {subj} cycles a lot.")],
        mention=["Legs are dead from the weekend ride.", "Cleaned the bike chain, very glamorous evening.",
                 "Too windy for cycling this week."],
    ),
    "baking": dict(
        noun="baking", qn=["baking", "bread making", "home baking"],
        venues=["the bakery school on Mill Street", "the community kitchen", "the Saturday sourdough workshop"],
        start=["Did a sourdough workshop at {venue} {rel} and now there's a starter living in my fridge.",
               "I've started baking! Proper bread. First class at {venue} was {rel}."],
        start_q=["When did {S} start making bread?", "When did {S} go to {pos} first baking class?",
                 "When did {S} take up baking?"],
        since=["I've baked bread every weekend for about {n} years now.",
               "{n} years of baking and I still burn the first batch of everything."],
        coach_kind=["baking teacher", "instructor", "teacher"],
        coach_prompt=["Who ran the class?", "Was the teacher good?"],
        coach=["{coach} teaches it. {Cpro} ran a bakery for twenty years and can tell dough is ready just by poking it.",
               "{coach}, who has flour permanently in {cpos} eyebrows."],
        gear=[("Bought a cast iron pot just for bread. It weighs as much as a small child.", "a cast-iron pot"),
              ("Got a proofing basket and a scoring blade, I'm basically a professional now.", "a proofing basket and a scoring blade"),
              ("Bought a stand mixer. The kitchen is now forty percent mixer.", "a stand mixer")],
        gear_q=["What did {S} buy for {pos} {qn}?", "What kitchen equipment did {S} get?"],
        made_prompt=["Baked anything good?", "What's coming out of your oven these days?", "Made anything new?"],
        made=[("My first proper loaf with an ear! The crust crackled as it cooled.", "a loaf with a proper ear", "a photo of a golden sourdough loaf on a rack"),
              ("Cardamom buns. Twelve of them. There are now four.", "cardamom buns", "a photo of twisted buns on a baking tray"),
              ("A three-tier lemon cake for my neighbour's birthday.", "a three-tier lemon cake", None)],
        made_q=["What did {S} bake that {subj} was proud of?", "What came out of {S}'s oven recently?",
                "What did {S} make in the kitchen?"],
        setback=[("My starter died. I forgot to feed it for a week.", "the sourdough starter died"),
                 ("Set off the smoke alarm twice with the same batch of croissants.", "set off the smoke alarm with croissants"),
                 ("Used salt instead of sugar in a whole tray of brownies.", "used salt instead of sugar in brownies")],
        setback_q=["What went wrong with {S}'s {qn}?", "What kitchen disaster did {S} have?"],
        events=[dict(name="the school bake sale", eq=["the bake sale", "the charity cake stall"],
                     results=[("Sold out in forty minutes!", "sold out in forty minutes"),
                              ("Raised about two hundred for the library.", "raised about 200 for the library")]),
                dict(name="the village show baking contest", eq=["the baking contest", "the show competition"],
                     results=[("Second place for my rye loaf!", "second place for a rye loaf"),
                              ("The judge called my crumb 'brave'. No rosette.", "no prize; the judge called the crumb brave")])],
        od=[("Could {S} plausibly sell bread at a farmers' market?", "Plausibly yes; {subj} bakes regularly and has sold bakes before."),
            ("Would a baking book be a welcome gift for {S}?", "Yes, likely; baking is one of {pos} hobbies.")],
        mention=["Kitchen still smells like burnt sugar from the weekend.", "Fed the starter, it's very bubbly and smug.",
                 "Didn't bake at all this week, the oven's being weird."],
    ),
    "painting": dict(
        noun="painting", qn=["painting", "watercolours", "art"],
        venues=["the watercolour class at the community centre", "the art club at the library", "the Thursday sketch group"],
        start=["Started {venue} {rel}. Everything I paint turns brown.",
               "Went to my first evening art class, {venue}, {rel}!"],
        start_q=["When did {S} take up watercolours?", "When did {S} go to {pos} first art class?",
                 "When did {S} start painting?"],
        since=["I've been painting with {venue} for {n} years now.",
               "{n} years of watercolours and I still can't do skies."],
        coach_kind=["art tutor", "painting teacher", "tutor"],
        coach_prompt=["Who teaches it?", "Is the tutor nice?"],
        coach=["The tutor, {coach}, paints huge seascapes and says 'let the water do the work' every five minutes.",
               "{coach}, who used to illustrate children's books."],
        gear=[("Bought a set of proper artist-grade paints, the colours are unreal.", "artist-grade paints"),
              ("Got a little folding easel for painting outside.", "a folding easel"),
              ("Bought a giant pad of cotton paper, it was eye-wateringly expensive.", "cotton watercolour paper")],
        gear_q=["What art supplies did {S} buy?", "What did {S} buy for {pos} {qn}?"],
        made_prompt=["Painted anything lately?", "What are you working on?", "Show me your latest!"],
        made=[("Painted the view from my kitchen window and it actually looks like the view!", "the view from {pos} kitchen window", "a photo of a watercolour of rooftops and a chimney"),
              ("Did a portrait of my grandad from an old photo.", "a portrait of {pos} grandad", None),
              ("A series of six little paintings of doors around town.", "six small paintings of doors", "a photo of six small door paintings pinned to a wall")],
        made_q=["What did {S} paint recently?", "What artwork did {S} finish?", "What was {S}'s latest picture of?"],
        setback=[("Knocked a whole jar of dirty water over something I'd spent three weeks on.", "spilled dirty water over a three-week painting"),
                 ("A gust of wind blew my paper into the river while I was working outside.", "the wind blew a painting into the river"),
                 ("The tutor said my perspective 'needs a conversation'. Ouch.", "the tutor criticised the perspective")],
        setback_q=["What went wrong with {S}'s {qn}?", "What setback did {S} have with {pos} artwork?"],
        events=[dict(name="the cafe exhibition", eq=["the cafe show", "the exhibition at the cafe"],
                     results=[("Sold the lighthouse one! To a stranger!", "sold the lighthouse painting to a stranger"),
                              ("Nobody bought anything but the owner wants to keep them up another month.", "nothing sold but the show was extended")]),
                dict(name="the open studio weekend", eq=["the open studios", "the art open weekend"],
                     results=[("About sixty people came through! Sold four cards.", "about sixty visitors and four cards sold"),
                              ("Mostly my relatives came. Mum bought two.", "mostly relatives; {pos} mum bought two")])],
        od=[("Would {S} enjoy a visit to an art museum?", "Likely yes; {subj} paints regularly."),
            ("Would a handmade card from {S} be a likely birthday gift?", "Plausibly yes; {subj} paints and has sold cards.")],
        mention=["Didn't paint this week, just stared at blank paper.", "Washed the brushes finally, the jar was disgusting.",
                 "Art class was cancelled, the tutor has a cold."],
    ),
    "swimming": dict(
        noun="swimming", qn=["swimming", "open-water swimming", "cold-water swimming"],
        venues=["the lido", "the sea swimming group", "the lake club"],
        start=["Did my first cold-water swim with {venue} {rel}. I screamed. Loudly.",
               "Started swimming lessons at {venue} {rel}, adult beginners. No shame."],
        start_q=["When did {S} take up swimming?", "When did {S} do {pos} first cold-water swim?",
                 "When did {S} start swimming lessons?"],
        since=["I've been swimming with {venue} for {n} years, winter included.",
               "{n} years of early swims now, it's the only thing that wakes me up."],
        coach_kind=["swimming coach", "coach", "instructor"],
        coach_prompt=["Does someone coach you?", "Who runs the sessions?"],
        coach=["{coach} runs the sessions. {Cpro} swims in just a cap in December like it's nothing.",
               "{coach}, who counts our lengths out loud and never loses count."],
        gear=[("Bought a wetsuit. Getting into it is a full workout.", "a wetsuit"),
              ("Got a tow float so boats can see me.", "a bright tow float"),
              ("New goggles that don't leak! Life-changing.", "goggles that don't leak")],
        gear_q=["What did {S} buy for {pos} {qn}?", "What new swim kit did {S} get?"],
        made_prompt=["How's the swimming?", "Still getting in the water?", "Any progress in the pool?"],
        made=[("Swam a whole kilometre without stopping!", "swam a kilometre without stopping", None),
              ("Swam out to the buoy and back, which was my big goal.", "swam out to the buoy and back", "a photo of an orange buoy far out on grey water"),
              ("Did my first swim in water under ten degrees.", "swam in water under ten degrees", None)],
        made_q=["What swimming goal did {S} reach?", "What did {S} manage in the water?",
                "What was {S}'s latest milestone in {qn}?"],
        setback=[("Got stung by a jellyfish on the arm.", "a jellyfish sting"),
                 ("Ear infection, so no water for two weeks.", "an ear infection"),
                 ("Someone took my towel while I was in, had to walk home damp.", "someone took {pos} towel")],
        setback_q=["What went wrong for {S} while swimming?", "What problem did {S} have with {pos} {qn}?"],
        events=[dict(name="the lake crossing", eq=["the lake crossing", "the open-water race"],
                     results=[("Made it across in fifty-two minutes!", "crossed in 52 minutes"),
                              ("Got pulled out at halfway because of the cold, but I'll be back.", "pulled out halfway because of the cold")]),
                dict(name="the sunrise charity dip", eq=["the charity dip", "the cold-water charity swim"],
                     results=[("Stayed in for ten whole minutes and raised a hundred and fifty.", "stayed in ten minutes and raised 150"),
                              ("Lasted ninety seconds. Raised money anyway.", "lasted ninety seconds")])],
        od=[("Would {S} likely enjoy a beach holiday?", "Probably yes; {subj} loves swimming."),
            ("Is {S} likely to cope well with cold weather?", "Likely yes; {subj} swims in cold water.")],
        mention=["Pool was full of kids doing lessons, couldn't swim a length.", "Skipped my swim, the water was brown after the rain.",
                 "Still have chlorine hair from the weekend."],
    ),
    "guitar": dict(
        noun="guitar", qn=["guitar", "guitar playing", "music"],
        venues=["the music shop on the high street", "the folk club", "the community music school"],
        start=["Bought a cheap acoustic and had my first lesson at {venue} {rel}.",
               "Started learning guitar {rel}! Lessons at {venue}."],
        start_q=["When did {S} start learning an instrument?", "When did {S} have {pos} first guitar lesson?",
                 "When did {S} take up the guitar?"],
        since=["I've been playing guitar for {n} years, mostly badly at parties.",
               "{n} years of guitar and I still can't play anything by ear."],
        coach_kind=["guitar teacher", "teacher", "tutor"],
        coach_prompt=["Who's your teacher?", "Are the lessons good?"],
        coach=["{coach} teaches me. {Cpro} played in a punk band in the nineties and still wears the jacket.",
               "{coach}, who makes me clap rhythms before I'm allowed to touch the strings."],
        gear=[("Got a capo and a tuner, I feel very official.", "a capo and a tuner"),
              ("Bought a little practice amp.", "a practice amp"),
              ("Upgraded to a proper electro-acoustic.", "an electro-acoustic guitar")],
        gear_q=["What did {S} buy for {pos} {qn}?", "What music gear did {S} get?"],
        made_prompt=["Playing anything yet?", "How's the practice?", "Learned anything new?"],
        made=[("I can finally play a barre chord without it buzzing.", "a clean barre chord", None),
              ("Learned the whole of Wonderwall. I'm sorry.", "the whole of Wonderwall", None),
              ("Wrote my first song. It's about my bus stop.", "wrote a song about a bus stop", "a photo of handwritten chords on a notepad")],
        made_q=["What did {S} learn or write on the guitar?", "What musical progress did {S} make?",
                "What can {S} play now?"],
        setback=[("My fingertips are shredded, I can't type.", "sore fingertips"),
                 ("Snapped the high E string twice in one week.", "snapped a string twice in a week"),
                 ("Left the guitar on the bus. Got it back from lost property two days later.", "left the guitar on a bus")],
        setback_q=["What went wrong with {S}'s {qn}?", "What mishap did {S} have with {pos} guitar?"],
        events=[dict(name="the open mic night", eq=["the open mic", "the pub performance"],
                     results=[("Played two songs and only forgot one verse!", "played two songs and forgot one verse"),
                              ("My hands shook the whole time but people clapped.", "hands shook but people clapped")]),
                dict(name="the folk session at the pub", eq=["the folk session", "the pub session"],
                     results=[("Managed to keep up for about half the tunes!", "kept up for about half the tunes"),
                              ("Mostly just strummed along quietly and drank cider.", "strummed quietly along")])],
        od=[("Would {S} enjoy a live music festival?", "Likely yes; {subj} plays guitar and performs."),
            ("Would a songbook be a good present for {S}?", "Yes, probably; {subj} plays guitar.")],
        mention=["Barely touched the guitar this week.", "Restrung the guitar, took an hour.",
                 "Practised scales while the pasta boiled."],
    ),
    "gardening": dict(
        noun="gardening", qn=["gardening", "vegetable growing", "allotment gardening"],
        venues=["the allotments by the railway", "the community garden", "the rooftop garden project"],
        start=["We got a plot at {venue}! Picked up the keys {rel} and it's pure brambles.",
               "Started volunteering at {venue} {rel}. I have no idea what I'm doing."],
        start_q=["When did {S} take up gardening?", "When did {S} get {pos} plot?",
                 "When did {S} start growing vegetables?"],
        since=["I've had my plot at {venue} for {n} years now.",
               "{n} years at {venue} and I still lose every battle with the slugs."],
        coach_kind=["gardening mentor", "mentor"],
        coach_prompt=["Does anyone help you out?", "Who's showing you what to do?"],
        coach=["{coach} on the next plot has been growing leeks for forty years and gives me advice whether I ask or not.",
               "{coach}, who runs the place and can name every weed in Latin."],
        gear=[("Bought a proper wheelbarrow.", "a wheelbarrow"),
              ("Got a little greenhouse, the plastic kind.", "a small plastic greenhouse"),
              ("Bought a compost bin the size of a phone box.", "a big compost bin")],
        gear_q=["What did {S} buy for {pos} {qn}?", "What did {S} get for the plot?"],
        made_prompt=["Growing anything yet?", "How's the plot?", "Anything to eat yet?"],
        made=[("First harvest! Three courgettes and a truly enormous marrow.", "courgettes and an enormous marrow", "a photo of a giant marrow next to a trowel"),
              ("Tomatoes! Dozens of them. I'm eating them like apples.", "dozens of tomatoes", "a photo of a bowl of cherry tomatoes"),
              ("Grew pumpkins big enough to sit on.", "pumpkins big enough to sit on", None)],
        made_q=["What did {S} harvest?", "What grew well for {S}?", "What produce did {S} get from {pos} {qn}?"],
        setback=[("Slugs ate every single lettuce overnight.", "slugs ate all the lettuces"),
                 ("Pigeons stripped the kale.", "pigeons ate the kale"),
                 ("Someone stole my rhubarb. Who steals rhubarb?", "someone stole {pos} rhubarb")],
        setback_q=["What went wrong with {S}'s {qn}?", "What pest or problem hit {S}'s plot?"],
        events=[dict(name="the allotment show", eq=["the allotment show", "the vegetable competition"],
                     results=[("My onions won second prize!", "second prize for onions"),
                              ("Entered the longest bean category. Lost to a man with a very long bean.", "lost the longest-bean category")]),
                dict(name="the seed swap", eq=["the seed swap", "the seed exchange"],
                     results=[("Came home with fourteen kinds of beans.", "came home with fourteen kinds of beans"),
                              ("Swapped all my chilli seeds for a rare purple tomato.", "swapped chilli seeds for a rare purple tomato")])],
        od=[("Would {S} likely enjoy visiting a botanical garden?", "Likely yes; {subj} gardens and grows {pos} own vegetables."),
            ("Is {S} likely to cook with home-grown vegetables?", "Yes, likely; {subj} grows vegetables.")],
        mention=["Spent the whole weekend weeding.", "The plot's a swamp after all this rain.",
                 "Watering took two hours this week, it's been so dry."],
    ),
    "knitting": dict(
        noun="knitting", qn=["knitting", "yarn crafts", "needlework"],
        venues=["the wool shop's Thursday circle", "the library knitting circle", "the pub knitting night"],
        start=["Went to {venue} for the first time {rel}. Everyone's over seventy and terrifyingly fast.",
               "I've started knitting! Learned to cast on at {venue} {rel}."],
        start_q=["When did {S} take up knitting?", "When did {S} first go to a knitting group?",
                 "When did {S} learn to cast on?"],
        since=["I've been knitting for {n} years, my mum taught me.",
               "I've gone to {venue} for {n} years now, they're my people."],
        coach_kind=["knitting mentor", "teacher"],
        coach_prompt=["Who's teaching you?", "Does anyone help you?"],
        coach=["{coach} from the circle is teaching me cables. {Cpro} can knit without looking.",
               "{coach}, who's knitted a jumper for every baby born on {cpos} street."],
        gear=[("Bought circular needles, the straight ones kept poking people on the train.", "circular needles"),
              ("Spent far too much on hand-dyed merino.", "hand-dyed merino yarn"),
              ("Got a yarn bowl so the ball stops rolling under the sofa.", "a yarn bowl")],
        gear_q=["What did {S} buy for {pos} {qn}?", "What supplies did {S} get?"],
        made_prompt=["What's on the needles?", "Made anything?", "Finished anything?"],
        made=[("Finished a scarf! Slightly longer on one side.", "a scarf", "a photo of a striped scarf on a bed"),
              ("A jumper for my nephew. He wore it for a whole day.", "a jumper for {pos} nephew", None),
              ("A hat with a ridiculous pompom.", "a pompom hat", "a photo of a red hat with a huge pompom")],
        made_q=["What did {S} knit?", "What did {S} finish making?", "What's the latest thing {S} made with yarn?"],
        setback=[("Dropped a stitch twenty rows back and had to unravel everything.", "dropped a stitch and unravelled twenty rows"),
                 ("The jumper came out big enough for two people.", "a jumper came out enormous"),
                 ("Moths got into my stash.", "moths in the yarn stash")],
        setback_q=["What went wrong with {S}'s {qn}?", "What setback did {S} have with {pos} yarn project?"],
        events=[dict(name="the town hall craft fair", eq=["the craft fair", "the makers' market"],
                     results=[("Sold every hat I brought!", "sold all the hats"),
                              ("Sold three things and bought five things. Net loss.", "sold three items, bought five")]),
                dict(name="the knit-a-thon for the hospice", eq=["the knit-a-thon", "the charity knitting event"],
                     results=[("We did twelve hours straight and made forty blankets.", "forty blankets in twelve hours"),
                              ("I lasted six hours before my wrists gave up.", "lasted six hours")])],
        od=[("Would {S} enjoy a wool and yarn festival?", "Likely yes; {subj} knits regularly."),
            ("Is {S} likely to make handmade gifts for friends?", "Probably; {subj} knits things for family.")],
        mention=["Knitted on the bus and missed my stop.", "Only did about three rows this week.",
                 "My knitting bag has exploded all over the living room."],
    ),
}


# Questions that reuse the evidence wording for hobby items (keyed by answer);
# the generator picks these about half of the time instead of a paraphrase.
ITEM_Q = {
    "bright orange running shoes": ("What colour are {S}'s new running shoes?", "bright orange"),
    "a GPS watch": "What watch did {S} treat {refl} to?",
    "a head torch": "What did {S} get so {subj} can still run after dark?",
    "ran eight kilometres round the reservoir without stopping": ("How far did {S} run round the reservoir?", "eight kilometres, without stopping"),
    "a 5k personal best of 26 minutes": "What is {S}'s personal best for the 5k?",
    "ran up the big hill on the Sunday route without walking": "What did {S} finally manage on the Sunday route?",
    "shin splints": "Why is {S} stuck doing stretches instead of running?",
    "lost a toenail": "What did {S} lose, sparing {O} the photo?",
    "was chased by a dog along the canal": ("What chased {S} along the canal?", "a dog"),
    "a trimming kit": "What did {S} buy because the studio one is blunt?",
    "a secondhand kick wheel": "What heavy thing did {S} find on Marketplace?",
    "a canvas apron": "What did {S} get to stop ruining {pos} jeans?",
    "a teapot with a lid that fits": "What did {S} make whose lid actually fits?",
    "four espresso cups": "What wonky things did {S} make that still hold coffee?",
    "a big blue serving bowl": "What did {S} make that {pos} mum already claimed?",
    "a hedgehog-shaped planter": ("What animal is {S}'s little planter shaped like?", "a hedgehog"),
    "several pieces cracked in the kiln": "What happened to {S}'s pieces in the kiln?",
    "the glaze ran and glued a bowl to the kiln shelf": "What happened to the glaze on {S}'s best bowl?",
    "a wrist strain from centring clay": "Why is {S} off the wheel for a bit?",
    "a wooden set with weighted pieces": "What kind of chess set did {S} buy?",
    "a digital chess clock": "What did {S} get to practise blitz at home?",
    "a book on endgames": "What book did {S} order that is like a brick?",
    "beat the club captain": ("Who did {S} beat for the first time?", "the club captain"),
    "an online rating above 1500": ("How high did {S}'s online rating go?", "past 1500"),
    "won a game with a queen sacrifice": "How did {S} win the game {subj} kept replaying all week?",
    "a five-game losing streak": ("How many games in a row did {S} lose?", "five"),
    "blundered a queen and cost the team a league match": "How did {S} lose the league match for the team?",
    "was told off for eating crisps during a game": "Why was {S} told off during a tournament game?",
    "a new bow": "What did {S} buy that cost more than {pos} bike?",
    "a hard case": "What kind of case did {S} get for carrying the cello?",
    "a folding music stand": "What did {S} buy instead of propping the book on the shelf?",
    "the prelude from Bach's first cello suite": "Which Bach piece can {S} play all the way through?",
    "played The Swan for {pos} mum": "What did {S} play for {pos} mum over video?",
    "passed grade three with a merit": "What grade exam did {S} pass, and how well?",
    "an A string snapped mid-lesson": ("Which string snapped during {S}'s lesson?", "the A string"),
    "a neighbour complained about the practice": "Why does {S} now practise with a mute?",
    "found a crack and took it to a luthier": "Why did {S} take {pos} cello to the luthier?",
    "a 50mm prime lens": "Which lens did {S} buy?",
    "a sturdy tripod": "What did {S} buy to replace the wobbly thing {subj} had?",
    "a secondhand medium-format camera": "What enormous camera did {S} buy secondhand?",
    "a photo chosen as photo of the month": "Which honour did one of {S}'s photos get at the club?",
    "a series of market-stall portraits": "What series of photos did {S} print for the wall?",
    "a shot of lightning over the harbour": "What did {S} photograph over the harbour?",
    "dropped the camera in the sea": "What happened to {S}'s camera at the sea?",
    "a corrupted memory card": "What happened to {S}'s memory card from the weekend?",
    "was shouted at for photographing someone's car": "Why did a man shout at {S}?",
    "climbing shoes two sizes too small": ("How small are {S}'s new climbing shoes?", "two sizes too small"),
    "a taco-shaped chalk bag": "What shape is {S}'s chalk bag?",
    "a harness": "What did {S} buy to start doing ropes?",
    "a V4 problem": ("Which grade did {S} send for the first time?", "V4"),
    "the orange overhang route": "Which route in the back room did {S} finally do?",
    "led a fifteen-metre route outdoors": ("How long was the first route {S} led outdoors?", "fifteen metres"),
    "a torn finger pulley": "What did {S} tear while climbing?",
    "split a fingertip on a sharp hold": "What did {S} split on a sharp hold?",
    "fell onto someone walking under the wall": "Who did {S} end up on the mat with after a fall?",
    "clip-in pedals": "What kind of pedals did {S} get?",
    "a bike computer": "What did {S} buy that made {obj} obsessed with average speed?",
    "a bright yellow waterproof jacket": ("What colour is {S}'s new waterproof jacket?", "bright yellow"),
    "a 100 km ride": ("How many kilometres was {S}'s first really long ride?", "a hundred kilometres"),
    "climbed the big hill out of town without stopping": "Which climb did {S} get up without stopping?",
    "rode to the coast": ("Where did {S} ride to before getting the train back?", "the coast"),
    "three punctures in one ride": ("How many punctures did {S} get on one ride?", "three"),
    "the saddle was stolen": ("What was nicked from {S}'s bike outside the supermarket?", "the saddle"),
    "the chain snapped on a hill": ("What snapped on {S}'s bike halfway up a hill?", "the chain"),
    "a cast-iron pot": "What heavy pot did {S} buy for bread?",
    "a proofing basket and a scoring blade": "What did {S} buy that makes {obj} basically a professional?",
    "a stand mixer": "What appliance now takes up a lot of {S}'s kitchen?",
    "a loaf with a proper ear": "What was special about {S}'s first proper loaf?",
    "cardamom buns": "What kind of buns did {S} make?",
    "a three-tier lemon cake": "What cake did {S} bake for a neighbour's birthday?",
    "the sourdough starter died": "What happened to {S}'s starter?",
    "set off the smoke alarm with croissants": ("What set off {S}'s smoke alarm twice?", "a batch of croissants"),
    "used salt instead of sugar in brownies": "What went wrong with {S}'s brownies?",
    "artist-grade paints": "What paints did {S} buy?",
    "a folding easel": "What did {S} get for painting outside?",
    "cotton watercolour paper": "What expensive paper did {S} buy?",
    "the view from {pos} kitchen window": "Which view did {S} paint?",
    "a portrait of {pos} grandad": ("Whose portrait did {S} paint from an old photo?", "{pos} grandad"),
    "six small paintings of doors": "What did {S}'s series of six little paintings show?",
    "spilled dirty water over a three-week painting": ("What did {S} knock over onto a painting?", "a jar of dirty water"),
    "the wind blew a painting into the river": ("Where did the wind blow {S}'s paper?", "into the river"),
    "the tutor criticised the perspective": ("What did {S}'s tutor say needs a conversation?", "{pos} perspective"),
    "a wetsuit": "What did {S} buy that takes a workout to get into?",
    "a bright tow float": "What did {S} get so boats can see {obj}?",
    "goggles that don't leak": "What new goggles did {S} get?",
    "swam a kilometre without stopping": ("How far did {S} swim without stopping?", "a kilometre"),
    "swam out to the buoy and back": "What was {S}'s big goal in the water?",
    "swam in water under ten degrees": ("How cold was the water on {S}'s coldest swim?", "under ten degrees"),
    "a jellyfish sting": ("What stung {S} on the arm?", "a jellyfish"),
    "an ear infection": "Why can't {S} go in the water for two weeks?",
    "someone took {pos} towel": ("What did someone take while {S} was in the water?", "{pos} towel"),
    "a capo and a tuner": "What did {S} buy that made {obj} feel very official?",
    "a practice amp": "What little amp did {S} buy?",
    "an electro-acoustic guitar": "What guitar did {S} upgrade to?",
    "a clean barre chord": "Which chord can {S} now play without buzzing?",
    "the whole of Wonderwall": "Which whole song did {S} learn?",
    "wrote a song about a bus stop": ("What is {S}'s first song about?", "a bus stop"),
    "sore fingertips": "Why can't {S} type?",
    "snapped a string twice in a week": ("Which string did {S} snap twice in one week?", "the high E string"),
    "left the guitar on a bus": ("Where did {S} leave {pos} guitar?", "on the bus (it came back via lost property)"),
    "a wheelbarrow": "What proper bit of kit did {S} buy?",
    "a small plastic greenhouse": "What kind of greenhouse did {S} get?",
    "a big compost bin": "What did {S} buy that is the size of a phone box?",
    "courgettes and an enormous marrow": "What was in {S}'s first harvest?",
    "dozens of tomatoes": "What is {S} eating like apples?",
    "pumpkins big enough to sit on": "What did {S} grow big enough to sit on?",
    "slugs ate all the lettuces": ("What ate every single one of {S}'s lettuces?", "slugs"),
    "pigeons ate the kale": "What happened to {S}'s kale?",
    "someone stole {pos} rhubarb": ("What did someone steal from {S}?", "{pos} rhubarb"),
    "circular needles": "What needles did {S} buy?",
    "hand-dyed merino yarn": "What did {S} spend far too much on?",
    "a yarn bowl": "What did {S} buy so the ball stops rolling under the sofa?",
    "a scarf": "What did {S} finish that is slightly longer on one side?",
    "a jumper for {pos} nephew": ("Who did {S} knit a jumper for?", "{pos} nephew"),
    "a pompom hat": "What did {S} make with a ridiculous pompom?",
    "dropped a stitch and unravelled twenty rows": ("How many rows did {S} have to unravel?", "twenty rows"),
    "a jumper came out enormous": "What went wrong with the jumper {S} knitted?",
    "moths in the yarn stash": ("What got into {S}'s stash?", "moths"),
}


# --------------------------------------------------------------------------
# Talk around a subject. In a topical session every arc step is the middle of
# an exchange of 5-12 turns; the turns around it come from these lists and
# reuse the subject's words (venue, teacher, neighbourhood, employer, ...)
# without adding facts that any question asks about. An exchange is a list of
# (role, text) or (role, text, caption); role 0 is the arc's owner, 1 the
# other person. Leading strings are tags that say when an exchange fits:
# "coach" mentions the teacher (only once the teacher has come up, or if the
# teacher is never asked about), "later" presumes the hobby is not brand new.

HOBBY_TALK = {
    "running": [
        [(1, "Is everyone friendly in {venue}?"), (0, "Very. Nobody gets left behind, even me.")],
        ["later", (1, "Are you still going out with {venue}?"), (0, "Twice a week. They'd send a search party otherwise.")],
        ["coach", (1, "Does {coach} still make you do hill repeats?"), (0, "Every single week. {coach} calls them character building.")],
        ["later", (0, "The usual loop with {venue} was pure mud this week.", "a photo of a muddy towpath at dawn"), (1, "Sounds grim."), (0, "Grim but weirdly fun.")],
        ["coach", (1, "How far is {coach} making you run these days?"), (0, "Depends on my legs. And on how loud {coach} shouts.")],
        ["later", (1, "Do you run in the rain?"), (0, "{venue} runs in anything. Sideways hail, once.", "a photo of muddy legs after a run")],
        ["later", (0, "My running tights have more holes than fabric now."), (1, "Is that a look?"), (0, "It's a running look.")],
    ],
    "pottery": [
        [(1, "Is {venue} far from you?"), (0, "Twenty minutes on the bus. I'm the one covered in clay.")],
        ["coach", (1, "Was {coach} there this week?"), (0, "Yes, hovering behind my wheel as usual.")],
        ["later", (1, "Is the kiln at {venue} working again?"), (0, "Sort of. It fires, it just takes its time about it.")],
        ["later", (0, "I spent half the evening at {venue} just wedging clay.", "a photo of a lump of clay on a canvas table"), (1, "Is that the kneading bit?"), (0, "Kneading for serious people, yes.")],
        ["later", (1, "Do you choose your own glazes?"), (0, "There's a shelf of about forty at {venue}. I always end up in the greens.", "a photo of a shelf of glaze buckets")],
        ["coach", (0, "{coach} says my centring is nearly there."), (1, "Is that good?"), (0, "From {coach}? That's a rave review.")],
        ["later", (1, "Do you still come home covered in clay?"), (0, "Every time. My washing machine hates {venue}.")],
    ],
    "chess": [
        [(1, "Is it quiet at {venue}?"), (0, "Deathly quiet, apart from the clocks clacking.", "a photo of rows of chess boards in a quiet hall")],
        ["later", (1, "Still going to {venue}?"), (0, "Every week. It's the only night I'm allowed to be competitive.")],
        ["coach", (1, "Does {coach} still make you replay your losses?"), (0, "Move by move. {coach} is merciless with a notebook.")],
        ["later", (0, "Someone at {venue} played the same opening against me three times this month."), (1, "Did you crack it?"), (0, "By the third game, yes.")],
        ["later", (1, "Do you play online as well?"), (0, "Blitz on my phone, mostly when I should be asleep.")],
        ["coach", (0, "{coach} set me a puzzle a day and I'm behind by about a week."), (1, "Ha, homework."), (0, "Chess homework. At my age.")],
    ],
    "cello": [
        [(1, "Does the cello fit in your car?"), (0, "Only if it gets the front seat. It has better legroom than me.", "a photo of a cello case strapped into a passenger seat")],
        ["later", (1, "Are you still practising every day?"), (0, "Trying to. Twenty minutes of scales before anything fun.")],
        ["coach", (1, "How's {coach}?"), (0, "Still telling me to relax my bow hand. {coach} says I hold it like a hammer.")],
        ["later", (0, "Rehearsal ran over again, as it always does with {venue}."), (1, "Do you mind?"), (0, "Not really, the cellos sit in the last row and gossip.")],
        ["later", (0, "My fingertips have finally hardened up."), (1, "Ew. And also congrats?"), (0, "Thank you.")],
        ["coach", (1, "Does {coach} ever play for you?"), (0, "Sometimes, to show me how it should sound. It's humbling.")],
    ],
    "photography": [
        [(1, "Do you shoot digital or film?"), (0, "Both, depending on my mood and my bank balance.")],
        ["later", (1, "Still going to {venue}?"), (0, "Every week I can. Rain or shine.")],
        ["coach", (1, "What does {coach} think of your stuff?"), (0, "{coach} says my horizons are finally straight. Progress.")],
        ["later", (0, "Spent all evening editing the last batch from {venue}.", "a photo of a laptop screen full of thumbnails"), (1, "Do you edit a lot?"), (0, "Less than I used to. Mostly just fixing the light.")],
        ["later", (0, "We had a critique night at {venue}."), (1, "Sounds scary."), (0, "It was. People are very honest about composition.")],
        ["coach", (1, "Does {coach} come on the walks too?"), (0, "Always at the front, pointing at puddles for reflections.")],
    ],
    "climbing": [
        [(1, "Do you climb outside too?"), (0, "When it's dry. Which is never.")],
        ["later", (1, "Still at the wall every week?"), (0, "Three times if I can. I basically live at {venue}.")],
        ["coach", (1, "Does {coach} still laugh when you fall?"), (0, "Every time. {coach} says falling is part of the sport.")],
        ["later", (0, "They reset half the problems at {venue}."), (1, "Is that good or bad?"), (0, "Both. Fresh stuff to try, but I lose my favourites.")],
        ["later", (1, "How are your hands?"), (0, "Chalky and shredded. Climber hands, apparently.", "a photo of chalky hands with taped fingers")],
        ["coach", (0, "{coach} made us do footwork drills for an hour."), (1, "On purpose?"), (0, "Silent feet, {coach} calls it.")],
    ],
    "cycling": [
        [(1, "Do you ride to work as well?"), (0, "When it's dry. I arrive looking like a tomato.")],
        ["later", (1, "Still doing the Sunday rides?"), (0, "Every week with {venue}, unless it's pouring.")],
        ["coach", (1, "Does {coach} still drop everyone on the hills?"), (0, "Every time. {coach} waits at the top eating a banana.")],
        ["later", (0, "Spent the evening degreasing everything on the bike."), (1, "Glamorous."), (0, "The bike looks better than I do.")],
        ["later", (0, "{venue} found a route that goes past a bakery.", "a photo of bikes leaning outside a bakery"), (1, "Best route."), (0, "Everyone stops. Nobody admits it's for the pastries.")],
        ["coach", (1, "Is {coach} ever gentle with you?"), (0, "Once. It was raining and {coach} felt sorry for us.")],
    ],
    "baking": [
        [(1, "Is the oven behaving?"), (0, "It runs hot on one side, so I turn everything halfway.")],
        ["later", (1, "Still baking every weekend?"), (0, "Every weekend. The flat permanently smells of toast.")],
        ["coach", (1, "What does {coach} say about your bread now?"), (0, "{coach} poked my dough and said better. I nearly cried.")],
        ["later", (0, "I've been trying longer proofs, overnight in the fridge.", "a photo of dough rising in a glass bowl"), (1, "Does it make a difference?"), (0, "The crumb is better. The fridge is fuller.")],
        ["later", (0, "Spent hours at {venue} learning to shape a batard."), (1, "A what?"), (0, "An oval loaf, basically. Very fancy name for an oval.")],
        ["coach", (1, "Does {coach} let you keep the dough?"), (0, "Whatever survives the class, yes.")],
    ],
    "painting": [
        [(1, "Do you paint outside?"), (0, "When it's dry. The wind has opinions about watercolour.")],
        ["later", (1, "Painting much at the moment?"), (0, "A bit most evenings, plus {venue} once a week.")],
        ["coach", (1, "What's {coach} got you doing now?"), (0, "Skies. {coach} says if I can do skies I can do anything.")],
        ["later", (0, "We did a still life at {venue}, three lemons and a jug."), (1, "Riveting."), (0, "You'd be amazed how hard a lemon is.")],
        ["later", (0, "My palette is so crusty it could be an artwork on its own."), (1, "Frame it!"), (0, "Don't tempt me.", "a photo of a crusty paint palette")],
        ["coach", (1, "Does {coach} do demos?"), (0, "Every week. {coach} makes it look so easy it's insulting.")],
    ],
    "swimming": [
        [(1, "Is it busy at {venue}?"), (0, "Early mornings are fine. After work it's chaos.")],
        ["later", (1, "Still swimming?"), (0, "Most mornings. Going to {venue} is the only thing that wakes me up.")],
        ["coach", (1, "Does {coach} still count your lengths?"), (0, "Out loud. {coach} never loses count, it's uncanny.")],
        ["later", (0, "The water at {venue} was freezing this week.", "a photo of grey water under a cloudy sky"), (1, "How cold?"), (0, "Cold enough that I forgot my own name.")],
        ["later", (1, "Do you swim in the rain?"), (0, "You're wet anyway, so why not.")],
        ["coach", (0, "{coach} has me breathing every three strokes."), (1, "Is it hard?"), (0, "I keep swallowing half the water.")],
    ],
    "guitar": [
        [(1, "Do your neighbours mind the practising?"), (0, "They haven't said anything. Yet.")],
        ["later", (1, "How's the guitar going?"), (0, "Slowly. The calluses are coming along though.")],
        ["coach", (1, "Is {coach} still making you clap rhythms?"), (0, "Every lesson. {coach} says rhythm first, chords later.")],
        ["later", (0, "Spent an hour at {venue} trying guitars I can't afford."), (1, "And? Did you cave?"), (0, "A pack of picks. Very restrained.")],
        ["later", (1, "Do you practise every day?"), (0, "Fifteen minutes, while the pasta boils.", "a photo of a guitar propped against a kitchen cupboard")],
        ["coach", (0, "{coach} gave me a strumming pattern and it's broken my brain."), (1, "Ha, show me sometime."), (0, "When it's less broken.")],
    ],
    "gardening": [
        [(1, "Do you grow flowers too?"), (0, "A few marigolds round the edges, they keep the bugs off.")],
        ["later", (1, "How's the plot?"), (0, "Busy. Everything grows at once or not at all.")],
        ["coach", (1, "Is {coach} still giving you advice?"), (0, "Whether I ask or not. {coach} was right about the beans, though.")],
        ["later", (0, "Spent the whole evening at {venue} weeding."), (1, "Sounds peaceful."), (0, "Peaceful until you meet the brambles.")],
        ["later", (0, "The water butt at {venue} is empty again."), (1, "Can't you use a hose?"), (0, "No hoses allowed. Watering cans only.", "a photo of two watering cans by a shed")],
        ["later", (1, "What are you planting next?"), (0, "Garlic, if I can find a spot the slugs don't know about.")],
    ],
    "knitting": [
        [(1, "Do you knit on the train?"), (0, "Always. People watch like it's a magic trick.")],
        ["later", (1, "What's on the needles now?"), (0, "Something with cables. It's going slowly.", "a photo of a half-finished cable knit on needles")],
        ["coach", (1, "How's {coach}?"), (0, "Faster than ever. {coach} finished a blanket while I did four rows.")],
        ["later", (0, "{venue} had a pattern swap this week."), (1, "Find anything good?"), (0, "A lace shawl I'm far too scared to try.")],
        ["later", (0, "I counted my yarn stash and I'm not telling anyone the number."), (1, "Ha, that bad?"), (0, "Worse.")],
        ["later", (1, "Do you follow patterns or make it up?"), (0, "Patterns. Making it up is how you end up with a jumper with three arms.")],
    ],
}
# How a question names the teacher, and venues that are groups rather than places.
HOBBY_CTAIL = {"running": "in {coach}'s group", "pottery": "in {coach}'s class", "chess": "in {coach}'s lessons",
               "cello": "in {coach}'s lessons", "photography": "in {coach}'s club", "climbing": "in {coach}'s sessions",
               "cycling": "on {coach}'s rides", "baking": "in {coach}'s class", "painting": "in {coach}'s class",
               "swimming": "in {coach}'s sessions", "guitar": "in {coach}'s lessons", "gardening": "with {coach}'s advice",
               "knitting": "in {coach}'s circle"}
VENUE_WITH = {"the Riverside Runners", "Parkside Striders", "the Canal Harriers", "the community orchestra",
              "the Wednesday strings group", "the Lightbox camera club", "the Tuesday photo-walk group", "the Velo Club",
              "the Sunday club ride", "the Wheelers", "the sea swimming group", "the lake club"}

# Turns inside an exchange that reuse none of its words.
GENERIC_TALK = [
    [(1, "I hear you.")],
    [(1, "Noted."), (0, "Ha.")],
    [(0, "Anyway, that's my news."), (1, "Thanks for the update.")],
    [(1, "Wait, really?"), (0, "Really.")],
    [(1, "Ha, of course.")],
    [(0, "I know, I know."), (1, "Haha.")],
    [(1, "Keep me posted."), (0, "Will do.")],
    [(1, "Okay, I need updates on this."), (0, "Promise.")],
    [(0, "Sorry, I've been going on about this for ages."), (1, "No, I love it!")],
    [(1, "Hmm."), (0, "Yeah.")],
    [(1, "That's so you."), (0, "Ha, fair.")],
    [(0, "Honestly, what a week."), (1, "I can tell!")],
    [(1, "Why am I not surprised."), (0, "Because you know me.")],
    [(0, "Anyway. Enough about that."), (1, "No, tell me more!")],
]

# Stop words for the check that a question word occurs near its evidence but
# not in it: the baseline script's own list.
from check_bm25 import STOP  # noqa: E402


def words(text):
    return set(w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP)


# --------------------------------------------------------------------------
# Core objects

REACT_POS = ["Haha, that's great!", "Oh nice!", "No way, amazing.", "Love that.", "Ooh, fancy.",
             "Wow, good for you!", "That's brilliant.", "Yesss.", "Ha, I love it.",
             "Okay that's actually really cool.", "Look at you!", "Amazing!!"]
REACT_NEG = ["Oh no!", "Ugh, that's rough.", "Oof.", "Noooo.", "That's so annoying.",
             "Ah man, sorry.", "Yikes.", "Oh dear.", "That's the worst."]
REACT_MILD = ["Ha, fair enough.", "Makes sense.", "Right, right.", "Hmm, interesting.", "Ah okay.",
              "Fair.", "Ha, classic."]
REACT_COACH = ["Ha, sounds like a character.", "I like them already.", "Ha, amazing.", "Sounds intense.",
               "Every class needs one of those."]
REACT_MENTION = ["Ha!", "Oof.", "Classic.", "Ha, fair.", "Sounds about right.", "Oh no, haha.", "Been there."]


class Turn:
    __slots__ = ("speaker", "text", "attach", "ref")

    def __init__(self, speaker, text, attach=None):
        self.speaker, self.text, self.attach, self.ref = speaker, text, attach, None


class Ctx:
    """Everything one conversation accumulates while it is generated."""

    def __init__(self, cid, a, b, rng):
        self.cid, self.people, self.rng = cid, (a, b), rng
        self.questions = []
        self.facts = {}
        self.mentions = []      # (first session index, person, [lines])
        self.talked = set()     # talk exchanges already used, so they repeat less
        self.used = set()
        for p in (a, b):
            for n in (p.name, p.boss, p.sib, p.partner, p.coworker, p.friend, p.kid and p.kid[0]):
                if n:
                    self.used.add(n.split()[-1])

    def name(self, g=None):
        g = g or self.rng.choice("fm")
        pool = [n for n in (NAMES_F if g == "f" else NAMES_M) if n not in self.used]
        n = self.rng.choice(pool)
        self.used.add(n)
        return n, g

    def q(self, cat, text, ev, answer):
        assert cat in CATEGORIES, cat
        assert 1 <= len(ev) <= 4, text
        assert all(isinstance(t, Turn) for t in ev), text
        if any(x["question"] == text for x in self.questions):
            return
        seen = []
        for t in ev:
            if t not in seen:
                seen.append(t)
        self.questions.append(dict(category=cat, question=text, ev=seen, answer=answer))


def pron(g):
    return dict(f=("she", "her", "her"), m=("he", "him", "his"))[g]


class Arc:
    steps = ()
    min_first = None    # latest allowed first session, as a share of all sessions

    def __init__(self, ctx, p, o):
        self.ctx, self.p, self.o, self.rng = ctx, p, o, ctx.rng
        self.sl = dict(p.slots())
        self.sl["O"] = o.name

    def f(self, s, **kw):
        d = dict(self.sl)
        d.update(kw)
        return s.format(**d)

    def T(self, who, text, attach=None, **kw):
        return Turn(who.name, cap(self.f(text, **kw)), attach)

    def pick(self, seq):
        return self.rng.choice(seq)

    max_days = None     # longest allowed span from first to last step
    topical = False     # True while a step is rendered for a topical session
    TALK = ()

    def ok(self, idx, n, dates):
        if self.min_first is not None and idx[0] > self.min_first * n:
            return False
        if self.max_days is not None and (dates[idx[-1]] - dates[idx[0]]).days > self.max_days:
            return False
        return True

    def prepare(self, sessions, dates):
        self.sessions, self.dates = sessions, dates

    def render(self, k, d):
        return getattr(self, "s_" + self.steps[k])(d)

    def finish(self):
        pass

    def Q(self, cat, text, ev, answer, **kw):
        self.ctx.q(cat, self.f(text, **kw), ev, self.f(answer, **kw))

    # Talk around the subject. x is a session index; the turns before a step
    # are chosen with x = s - 0.5, so they never presume what the step says.
    # Tags: "from:STEP" from that step's turns on, "until:STEP" up to them,
    # "before:STEP" only in earlier sessions, "later:STEP" in later sessions.

    def at(self, step):
        return self.sessions[self.steps.index(step)]

    def live(self, x):
        return x >= self.sessions[0]

    def talk_pool(self):
        return self.TALK

    def tag_ok(self, tag, x):
        kind, _, step = tag.partition(":")
        if step not in self.steps:
            return False
        i = self.at(step)
        return {"from": x >= i, "until": x < i, "before": x < i - 0.5, "later": x > i}[kind]

    def talk(self, x):
        if not self.live(x):
            return []
        return [ex for ex in self.talk_pool()
                if all(self.tag_ok(t, x) for t in ex if isinstance(t, str))]

    def anchors(self, step, s):
        """(key, edit) pairs for questions about this step: a name that the
        turns around the evidence can hold, and a function that works it into
        a question (or returns None)."""
        return []

    def idle_ok(self, s):
        """Whether session s can hold an exchange on this subject with no fact."""
        return False

    def turns_of(self, ex):
        out = []
        for item in ex:
            if isinstance(item, str):
                continue
            who = self.p if item[0] == 0 else self.o
            att = self.f(item[2]) if len(item) > 2 and self.rng.random() < 0.8 else None
            out.append(self.T(who, item[1], att))
        return out


# --------------------------------------------------------------------------
# Hobby arcs

class HobbyArc(Arc):
    def __init__(self, ctx, p, o, key, new):
        super().__init__(ctx, p, o)
        r = self.rng
        h = self.h = HOBBIES[key]
        self.key, self.new = key, new
        cn, cg = ctx.name()
        cs, _, cpos = pron(cg)
        self.coach = cn
        self.sl.update(venue=h["venues"][r.randrange(len(h["venues"]))], coach=cn, cpro=cs,
                       Cpro=cap(cs), cpos=cpos, noun=h["noun"], Noun=cap(h["noun"]))
        middle = ["coach", "gear", "made", "setback", "made2"]
        pickd = r.sample(middle, r.randint(2, 3) if new else r.randint(1, 3))
        chosen = [m for m in middle if m in pickd]
        if "made2" in chosen and "made" not in chosen:
            chosen[chosen.index("made2")] = "made"
        if len(chosen) > 2 and r.random() < 0.5:
            tail = chosen[1:]
            r.shuffle(tail)
            chosen = chosen[:1] + tail
        self.has_event = r.random() < 0.7
        self.steps = (["start" if new else "since"] + chosen
                      + (["event_plan", "event_result"] if self.has_event else []))
        self.min_first = 0.45 if new else None
        self.event = r.choice(h["events"])
        self.result = r.choice(self.event["results"])
        self.made_items = r.sample(h["made"], 2)
        self.gear = r.choice(h["gear"])
        self.setback = r.choice(h["setback"])
        self.years = r.randint(2, 9)
        self.t = {}

    def qn(self):
        return self.pick(self.h["qn"])

    def live(self, x):
        return not self.new or x >= self.sessions[0]

    def talk_pool(self):
        return HOBBY_TALK[self.key]

    def coach_ok(self, x):
        return "coach" not in self.steps or x > self.at("coach")

    def tag_ok(self, tag, x):
        if tag == "coach":
            return self.coach_ok(x)
        if tag == "later":
            return not self.new or x > self.sessions[0]
        return super().tag_ok(tag, x)

    def anchors(self, step, s):
        v = self.sl["venue"]
        if step == "event_result":
            return []
        out = [(v, tail(("with " if v in VENUE_WITH else "at ") + v))]
        if self.coach_ok(s) and step in ("start", "since", "gear", "made", "made2", "setback"):
            out.append((self.coach, tail(self.f(HOBBY_CTAIL[self.key]))))
        return out

    def idle_ok(self, s):
        return not self.new or s > self.sessions[0]

    def item_q(self, ans, templates):
        """(question, answer): a paraphrase template, or about half of the
        time a question reusing the evidence wording (ITEM_Q)."""
        if ans in ITEM_Q and self.rng.random() < P_ITEM_Q:
            v = ITEM_Q[ans]
            return v if isinstance(v, tuple) else (v, ans)
        return self.pick(templates), ans

    def prepare(self, sessions, dates):
        super().prepare(sessions, dates)
        if self.has_event:
            dp = dates[self.steps.index("event_plan")]
            dr = dates[self.steps.index("event_result")]
            self.ev_past = past(self.rng, dr, kinds=("yesterday", "wd", "wd", "days"), after=dp)
            self.ev_future = future(self.rng, dp, self.ev_past.day)
        self.ctx.mentions.append((sessions[0] + (1 if self.new else 0), self.p,
                                  self.h["mention"] + ["Skipped {noun} this week, no energy at all.",
                                                       "{Noun} was fine this week, nothing to report."]))

    def s_start(self, d):
        p, o = self.p, self.o
        w = past(self.rng, d, kinds=("yesterday", "wd", "wd", "days", "week", "weekend"))
        self.start_when = w
        line = self.pick(self.h["start"])
        t1 = self.T(p, line, rel=w.phrase)
        t2 = self.T(o, self.pick(REACT_POS) + " " + self.pick(["How was it?", "Did you like it?", "Are you hooked?"]))
        t3 = self.T(p, self.pick(["Hard! But fun.", "Humbling. Very humbling.", "I think I'm hooked, honestly.",
                                  "Exhausting, but I'm going back next week."]))
        self.t["start"] = t1
        self.Q("temporal", self.pick(self.h["start_q"]), [t1], w.answer)
        if self.rng.random() < 0.5:
            qs = ["What new pastime did {S} start?", "What did {S} take up around %s?" % fmonth(w.day)]
            if "{venue}" in line:
                qs = ["What new activity did {S} take up at {venue}?", "What did {S} sign up for at {venue}?"]
            self.Q("single-hop", self.pick(qs), [t1], self.h["noun"])
        self.ctx.facts.setdefault("starts", []).append((self.p, self.key, t1, w))
        return [t1, t2, t3]

    def s_since(self, d):
        p, o = self.p, self.o
        turns = []
        ev = []
        if self.rng.random() < 0.5:
            t0 = self.T(o, self.pick(["How long have you been doing {noun} now?",
                                      "Wait, how long have you been into {noun}?"]))
            turns.append(t0)
            ev.append(t0)
        t1 = self.T(p, self.pick(self.h["since"]), n=NUM[self.years])
        turns += [t1, self.T(o, self.pick(REACT_MILD + REACT_POS))]
        ev.append(t1)
        self.t["since"] = t1
        self.since_ev = ev
        self.Q("open-domain", "Is {S} a beginner at {qn}?", ev,
               "No; {subj} has been doing it for about {n} years (as of {dd}).", qn=self.qn(),
               n=self.years, dd=fdate(d))
        if self.rng.random() < 0.6:
            self.Q("temporal", "Roughly which year did {S} start {qn}?", ev,
                   "around {y} (about {n} years before {dd})", qn=self.qn(), y=d.year - self.years,
                   n=self.years, dd=fdate(d))
        return turns

    def s_coach(self, d):
        p, o = self.p, self.o
        line = self.pick(self.h["coach"])
        if self.rng.random() < 0.5:
            t0 = self.T(p, self.pick(["Back from {venue}, I'm shattered.", "{Noun} was good this week.",
                                      "Went to {venue} again, loving it."]))
            t1 = self.T(o, self.pick(self.h["coach_prompt"]))
            t2 = self.T(p, line)
            turns, ev = [t0, t1, t2, self.T(o, self.pick(REACT_COACH))], [t1, t2]
        else:
            t2 = self.T(p, self.pick(["Have I told you about the people at {venue}? ",
                                      "The best part of {noun} is the people. "]) + line)
            turns, ev = [t2, self.T(o, self.pick(REACT_COACH))], [t2]
        self.Q("single-hop", self.pick(["Who is {S}'s {ck}?", "Who teaches {S} {qn}?",
                                        "Who guides {S} in {qn}?"]), ev, self.coach,
               ck=self.pick(self.h["coach_kind"]), qn=self.qn())
        return turns

    def s_gear(self, d):
        p, o = self.p, self.o
        line, ans = self.gear
        t1 = self.T(p, line, "a photo of " + ans if self.rng.random() < 0.3 else None)
        t2 = self.T(o, self.pick(REACT_POS))
        qq, qa = self.item_q(ans, self.h["gear_q"])
        self.Q("single-hop", qq, [t1], qa, qn=self.qn())
        return [t1, t2]

    def _made(self, d, item, key):
        p, o = self.p, self.o
        line, ans, caption = item
        att = caption if caption and self.rng.random() < 0.8 else None
        if self.rng.random() < 0.45:
            t1 = self.T(o, self.pick(self.h["made_prompt"]))
            t2 = self.T(p, line, att)
            turns, ev = [t1, t2, self.T(o, self.pick(REACT_POS))], [t1, t2]
        else:
            lead = [""] if self.topical else ["Small {noun} win: ", "{Noun} update! ", "Proud {noun} moment: ", ""]
            t2 = self.T(p, self.pick(lead) + line, att)
            turns, ev = [t2, self.T(o, self.pick(REACT_POS))], [t2]
        self.t[key] = (ev, ans, d)
        qq, qa = self.item_q(ans, self.h["made_q"])
        self.Q("single-hop", qq, ev, qa, qn=self.qn())
        return turns

    def s_made(self, d):
        return self._made(d, self.made_items[0], "made")

    def s_made2(self, d):
        return self._made(d, self.made_items[1], "made2")

    def s_setback(self, d):
        p, o = self.p, self.o
        line, ans = self.setback
        t1 = self.T(p, self.pick([""] if self.topical else ["Ugh, {noun} drama: ", "Bad week for {noun}. ", "", ""]) + line)
        t2 = self.T(o, self.pick(REACT_NEG))
        t3 = self.T(p, self.pick(["Anyway. Onwards.", "It's fine. It's fine.", "Lesson learned, I suppose.",
                                  "I'll get over it. Eventually."]))
        qq, qa = self.item_q(ans, self.h["setback_q"])
        self.Q("single-hop", qq, [t1], qa, qn=self.qn())
        return [t1, t2, t3]

    def s_event_plan(self, d):
        p, o = self.p, self.o
        name = self.event["name"]
        t1 = self.T(p, self.pick(["Signed up for {name} {when}. What have I done.",
                                  "{Name} is {when}, I'm already nervous.",
                                  "So {name} is {when}. Wish me luck."]),
                    name=name, Name=cap(name), when=self.ev_future.phrase)
        t2 = self.T(o, self.pick(["Good luck!!", "You'll smash it.", "Ooh, can I come and watch?",
                                  "You've got this."]))
        self.t["plan"] = t1
        return [t1, t2]

    def s_event_result(self, d):
        p, o = self.p, self.o
        name = self.event["name"]
        line, ans = self.result
        if self.topical and self.rng.random() < P_SHORT:
            # The other person names the event; the answer turn does not.
            t0 = self.T(o, self.pick(["So how did {name} go?", "Wait, how was {name}?", "Did {name} happen in the end?"]),
                        name=name)
            t1 = self.T(p, self.pick(["It was {rel}! ", "Yes, {rel}! "]) + line, rel=self.ev_past.phrase)
            turns, ev = [t0, t1, self.T(o, self.pick(REACT_POS))], [t1]
        elif self.rng.random() < 0.4:
            t1 = self.T(p, "{Name} was {rel}!", name=name, Name=cap(name), rel=self.ev_past.phrase)
            t2 = self.T(o, self.pick(["And?? How did it go?", "Tell me everything.", "Aaand?"]))
            t3 = self.T(p, line)
            turns, ev = [t1, t2, t3, self.T(o, self.pick(REACT_POS))], [t1, t3]
        else:
            t1 = self.T(p, "{Name} was {rel}. " + line, name=name, Name=cap(name), rel=self.ev_past.phrase)
            turns, ev = [t1, self.T(o, self.pick(REACT_POS))], [t1]
        eq = self.pick(self.event["eq"])
        self.Q("single-hop", self.pick(["How did {S} do at {eq}?", "How did {eq} go for {S}?",
                                        "What was {S}'s result in {eq}?"]), ev, ans, eq=eq)
        ans_t = self.ev_future.answer if self.ev_future.exact else self.ev_past.answer
        self.Q("temporal", self.pick(["When did {S} take part in {eq}?", "When was {eq} that {S} entered?",
                                      "On what date was {S}'s {eqs}?"]),
               [self.t["plan"], t1], ans_t, eq=eq, eqs=eq.replace("the ", "", 1))
        self.t["result"] = ev
        return turns

    def finish(self):
        r = self.rng
        base = [self.t["start"]] if self.new else list(self.since_ev)
        extra = []
        if "made" in self.t:
            extra = self.t["made"][0]
        elif "result" in self.t:
            extra = self.t["result"]
        odq, oda = r.choice(self.h["od"])
        self.Q("open-domain", odq, (base + extra)[:4], oda)
        if "made2" in self.t and "made" in self.t:
            a = self.f(self.t["made"][1])
            b = self.f(self.t["made2"][1])
            self.Q("multi-hop", self.pick(["Name two things {S} has made or achieved in {qn}.",
                                           "What two {noun} successes has {S} mentioned?"]),
                   self.t["made"][0][-1:] + self.t["made2"][0][-1:], "%s; %s" % (a, b), qn=self.qn())
        if self.new and "made" in self.t:
            ev, ans, dm = self.t["made"]
            self.Q("temporal", "How long after taking up {qn} did {S} report {what}?",
                   [self.t["start"]] + ev[-1:], "%s (from %s to %s)" % (
                       span(self.start_when.day, dm), self.start_when.answer, fdate(dm)),
                   qn=self.qn(), what=self.f(ans))


# --------------------------------------------------------------------------
# Life-event arcs

MOVE_REASONS = [
    ("Our landlord just emailed: the rent's going up by {pct} percent from next month.",
     "Was money a factor in {S}'s decision to move?",
     "Yes; {pos} landlord raised the rent by {pct} percent, which pushed {obj} to look for somewhere cheaper.",
     "Did the rent going up push {S} to look for a new place?"),
    ("I worked out I spend eleven hours a week commuting to {company}. Eleven!",
     "Was {S}'s move likely about getting closer to work?",
     "Yes, probably; {subj} complained about spending eleven hours a week commuting.",
     "Was the commute to {company} part of why {S} wanted to move?"),
    ("The bar under our flat has started doing karaoke until 2am. Every. Single. Night.",
     "Would {S} probably have stayed in the old flat if it had been quieter?",
     "Probably; the main complaint was the karaoke bar below keeping {obj} up until 2am.",
     "Was the karaoke bar under {S}'s flat the main reason to leave?"),
    ("Working from home in a one-bed is slowly destroying me. My desk is the ironing board.",
     "Is having room for a home office likely important to {S}?",
     "Yes; {subj} was working from home at an ironing board in a one-bed flat.",
     "Would a flat with room to work from home suit {S} better than the one-bed?"),
]
FEATURES = [("a huge kitchen with a window over the sink", "a huge kitchen"),
            ("a balcony looking over the park", "a balcony overlooking the park"),
            ("a little garden with an apple tree", "a small garden with an apple tree"),
            ("a spare room that could be an office", "a spare room for an office"),
            ("a bath with clawed feet, I'm not even joking", "a clawfoot bath")]
NEIGHBOURS = [
    ("The people downstairs practise the trumpet every evening at seven. Sharp.",
     "they practise the trumpet every evening at seven", "What do the people living below {S} do in the evenings?",
     "What do {S}'s downstairs neighbours practise every evening?"),
    ("The woman next door already brought us a lemon cake and a list of bin rules.",
     "a lemon cake and a list of bin rules", "What did {S}'s new next-door neighbour bring round?",
     "What did the woman next door bring {S}?"),
    ("There's a massive grey cat from upstairs that just strolls in like it pays rent.",
     "a big grey cat from upstairs keeps wandering in", "Which animal keeps visiting {S}'s new home?",
     "What strolls into {S}'s flat from upstairs?"),
    ("The guy across the hall is a drummer. He's very polite about it. It's still drums.",
     "he plays the drums", "What instrument does {S}'s neighbour across the hall play?",
     "What does the guy across the hall from {S} do that's very polite but loud?"),
]


class MoveArc(Arc):
    steps = ("consider", "viewing", "signed", "keys", "settled")
    TALK = [
        ["until:signed", (1, "How long have you lived in {hood} now?"), (0, "Six years. It was only ever meant to be for one.")],
        ["until:keys", (0, "I'll miss {hood} though. The man in the corner shop knows my order."), (1, "That's a real loss."), (0, "It is.")],
        ["until:signed", (1, "Is flat hunting in {city} as bad as everyone says?"), (0, "Worse. Twenty people at every viewing.")],
        ["until:signed", (0, "Every letting agent in {city} has the same haircut and the same smile."), (1, "Ha, the agent uniform.")],
        ["from:viewing", "until:signed", (1, "Would you stay in {hood} if you could?"), (0, "Maybe. But the flats there go for silly money now.")],
        ["from:keys", (1, "How's {new} treating you?"), (0, "Loving it. There's a bakery on the corner that opens at six.")],
        ["from:keys", (0, "Still unpacking. There's a box in the hall I'm scared to open.", "a photo of a hallway full of boxes"), (1, "Just label it misc and forget it.")],
        ["from:keys", (0, "I keep walking back towards {hood} on autopilot."), (1, "Ha, muscle memory.")],
        ["later:keys", (1, "Have you found a local yet in {new}?"), (0, "A tiny pub with a dog behind the bar. Perfect.", "a photo of a small pub with a dog behind the bar")],
        ["later:keys", (1, "Does {new} feel like home yet?"), (0, "Getting there. I know which floorboards creak now.")],
    ]

    def __init__(self, ctx, p, o):
        super().__init__(ctx, p, o)
        r = self.rng
        hoods = [h for h in CITY_HOODS[p.city] if h != p.hood]
        self.new, self.cand = r.sample(hoods, 2)
        self.reason = r.choice(MOVE_REASONS)
        self.feature = r.choice(FEATURES)
        self.neigh = r.choice(NEIGHBOURS)
        self.sl.update(new=self.new, cand=self.cand, Cand=cap(self.cand), pct=r.choice([12, 15, 18, 20]),
                       company=p.company, stairs=NUM[r.randint(3, 6)], hood=p.hood, city=p.city)
        self.t = {}

    def anchors(self, step, s):
        out = [(self.p.hood, tail("after leaving " + self.p.hood))]
        if step in ("keys", "settled"):
            out.append((self.new, tail("in " + self.new)))
        return out if step in ("signed", "keys", "settled") else []

    def idle_ok(self, s):
        return s > self.sessions[0]

    def s_consider(self, d):
        p, o = self.p, self.o
        t1 = self.T(p, self.reason[0])
        t2 = self.T(o, self.pick(["Ugh. What are you going to do?", "Again?! Are you going to stay?",
                                  "That's awful. Will you look for somewhere else?"]))
        t3 = self.T(p, self.pick(["Honestly? Might be time to move. I've been browsing {cand} and {new}.",
                                  "We're going to look around. {Cand} maybe, or {new}."]))
        self.t["consider"] = t1
        self.Q("open-domain", self.reason[1] if self.rng.random() < 0.5 else self.reason[3], [t1],
               self.reason[2])
        return [t1, t2, t3]

    def s_viewing(self, d):
        p, o = self.p, self.o
        w = past(self.rng, d, kinds=("yesterday", "wd", "weekend"))
        t1 = self.T(p, "Spent {rel} viewing flats. The one in {cand} smelled like wet dog.", rel=w.phrase)
        t2 = self.T(o, self.pick(["Lovely. Anything good though?", "Ha, gross. Any nice ones?"]))
        t3 = self.T(p, "One in {new} with {feat}. I'm a little bit in love.", feat=self.feature[0])
        self.t["viewing"] = t3
        return [t1, t2, t3]

    def s_signed(self, d):
        p, o = self.p, self.o
        w = past(self.rng, d, kinds=("yesterday", "wd", "days"))
        self.signed_when = w
        if self.rng.random() < 0.5:
            t1 = self.T(o, self.pick(["Any news on the flat?", "Did you hear back about that place?"]))
            t2 = self.T(p, "We got it!! Signed everything {rel}. {new}, here we come.", rel=w.phrase)
            turns = [t1, t2, self.T(o, self.pick(REACT_POS))]
        else:
            t2 = self.T(p, "We signed the lease on the {new} flat {rel}! It's actually happening.", rel=w.phrase)
            turns = [t2, self.T(o, self.pick(REACT_POS)),
                     self.T(p, "Now I just need to find a van and about forty boxes.")]
        self.t["signed"] = t2
        self.Q("single-hop", self.pick(["Which neighbourhood did {S} relocate to?", "Where is {S}'s new home?",
                                        "Which part of {city} did {S} move to?",
                                        "Which neighbourhood is the flat {S} signed the lease on in?",
                                        "Where is the flat {S} signed for?"]), [t2], self.new, city=p.city)
        return turns

    def s_keys(self, d):
        p, o = self.p, self.o
        w = past(self.rng, d, kinds=("yesterday", "wd", "wd", "days", "weekend"), after=self.signed_when.day)
        self.keys_when = w
        t1 = self.T(p, "We got the keys {rel} and I have carried roughly a thousand boxes up {stairs} flights of stairs.",
                    "a photo of cardboard boxes stacked in an empty room" if self.rng.random() < 0.4 else None,
                    rel=w.phrase)
        t2 = self.T(o, "No lift?")
        t3 = self.T(p, "No lift. My legs have filed a complaint.")
        self.t["keys"] = t1
        self.Q("temporal", self.pick(["When did {S} move into {pos} new place?",
                                      "When did {S} collect the keys to the new flat?"]), [t1], w.answer)
        self.Q("single-hop", self.pick(["How many floors does {S} have to climb to reach {pos} new home?",
                                        "How many flights of stairs are there up to {S}'s new flat?"]),
               [t1, t3], "{stairs} flights of stairs, with no lift")
        if w.exact and self.signed_when.exact:
            self.Q("temporal", "How long after signing the lease did {S} move in?", [self.t["signed"], t1],
                   "%s (lease signed %s, keys %s)" % (span(self.signed_when.day, w.day),
                                                      self.signed_when.answer, w.answer))
        self.ctx.facts.setdefault("moves", []).append(dict(p=p, signed=self.t["signed"], keys=t1,
                                                           day=w.day, new=self.new))
        return [t1, t2, t3]

    def s_settled(self, d):
        p, o = self.p, self.o
        t1 = self.T(o, self.pick(["How's the new place?", "Settling in okay?"]))
        t2 = self.T(p, self.neigh[0])
        t3 = self.T(o, self.pick(REACT_MILD + REACT_POS))
        self.Q("single-hop", self.neigh[2] if self.rng.random() < 0.5 else self.neigh[3], [t1, t2], self.neigh[1])
        return [t1, t2, t3]

    def finish(self):
        self.Q("multi-hop", self.pick(["What feature of {S}'s new home won {obj} over during the viewings?",
                                       "What did the flat {S} ended up renting have that {subj} loved?",
                                       "What did {S} fall in love with at the {new} flat?"]),
               [self.t["viewing"], self.t["signed"]], self.feature[1])


NEWCOS = ["Brightwater", "Lumen Labs", "Oakline", "Meridian Group", "Northstar", "Kestrel & Co",
          "Bluefin", "Halcyon", "Tallow Street", "Copperleaf"]
TASKS = [("give a ten-minute presentation on a project I'm proud of",
          "give a ten-minute presentation about a project {subj} was proud of"),
         ("solve a case study on a whiteboard in front of three people",
          "solve a case study on a whiteboard in front of three people"),
         ("do a timed written exercise in a tiny room with no windows", "a timed written exercise"),
         ("answer questions from a panel of five, including the CEO",
          "answer questions from a five-person panel including the CEO")]
PERKS = [("It's a four-day week!", "a four-day working week"),
         ("Fully remote on Fridays and a proper training budget.", "remote Fridays and a training budget"),
         ("Twenty percent more money and free lunch on Thursdays.", "a 20 percent pay rise and free Thursday lunches"),
         ("They'll pay for a part-time master's, which is what I really wanted.", "a paid part-time master's degree")]
PROJECTS = [("the switch to the new booking system", "the switch to a new booking system"),
            ("a new mentoring scheme for juniors", "a mentoring scheme for junior staff"),
            ("a partnership with the university", "a partnership with the university"),
            ("the move to the new office", "the office move")]
UNHAPPY = ["{boss} moved our team meeting to 7:30 in the morning again. Third time this month.",
           "{boss} took credit for my report in front of the whole department today.",
           "{boss} has cancelled my leave twice now. I'm so done."]


class JobArc(Arc):
    steps = ("unhappy", "interview", "offer", "first_day", "lead")
    TALK = [
        ["before:first_day", (1, "Is {boss} still making your life hard?"), (0, "Every day. {boss} sent me three emails during lunch.")],
        ["until:offer", (0, "Things at {company} are just grim at the moment."), (1, "Grim how?"), (0, "Everyone's either leaving or thinking about it.")],
        ["later:unhappy", "until:offer", (1, "Have you told anyone at {company} you're looking?"), (0, "Only one person. We have a code word.")],
        ["until:interview", (0, "I had to redo my whole CV, I hadn't touched it in years."), (1, "Did you remember everything you've done?"), (0, "Barely.")],
        ["until:offer", (1, "What does a senior {job} even do differently?"), (0, "More meetings, mostly.")],
        ["later:offer", "before:first_day", (0, "Working my notice at {company} is so awkward."), (1, "Does {boss} know why you're going?"), (0, "{boss} hasn't asked. Which says it all.")],
        ["from:first_day", (1, "How's {newco} so far?"), (0, "Really good. People actually say thank you.")],
        ["later:first_day", (1, "Is {mgr} as nice as they seemed?"), (0, "Nicer. {mgr} keeps Friday afternoons free of meetings.")],
        ["from:first_day", (0, "I don't miss {company} at all, which surprises me."), (1, "Not even a little?"), (0, "I miss the coffee machine. That's it.")],
        ["later:first_day", (1, "Do you still hear from anyone at {company}?"), (0, "A couple of people. {boss} is apparently still {boss}.")],
        ["later:first_day", (0, "The {newco} office has a roof terrace."), (1, "Fancy!"), (0, "Nobody uses it because of the pigeons.")],
    ]

    def __init__(self, ctx, p, o):
        super().__init__(ctx, p, o)
        r = self.rng
        self.newco = r.choice(NEWCOS)
        self.mgr = ctx.name()[0]
        self.task = r.choice(TASKS)
        self.perk = r.choice(PERKS)
        self.project = r.choice(PROJECTS)
        self.sl.update(newco=self.newco, mgr=self.mgr, boss=p.boss, company=p.company, job=p.job)
        self.t = {}

    def anchors(self, step, s):
        if step in ("interview", "offer"):
            return [(self.p.boss, tail("after all the trouble with " + self.p.boss))]
        if step in ("first_day", "lead"):
            return [(self.p.company, tail("after leaving " + self.p.company))]
        return []

    def idle_ok(self, s):
        return s > self.sessions[0]

    def s_unhappy(self, d):
        p, o = self.p, self.o
        t1 = self.T(p, self.pick(UNHAPPY))
        t2 = self.T(o, self.pick(REACT_NEG))
        t3 = self.T(p, self.pick(["I'm starting to look around, honestly.",
                                  "I've started updating my CV. Don't tell anyone."]))
        self.t["unhappy"] = t1
        return [t1, t2, t3]

    def s_interview(self, d):
        p, o = self.p, self.o
        w = past(self.rng, d, kinds=("yesterday", "wd", "days"))
        self.iv_when = w
        pre = []
        if self.topical and self.rng.random() < P_SHORT:
            pre = [self.T(o, self.pick(["Wasn't the {newco} interview this week?", "Did the {newco} interview happen?"]))]
            t1 = self.T(p, "It did, {rel}! For a senior {job} role.", rel=w.phrase)
        else:
            t1 = self.T(p, "Had the interview at {newco} {rel}, for a senior {job} role.", rel=w.phrase)
        t2 = self.T(o, self.pick(["Ooh! How did it go?", "And?!", "How was it?"]))
        t3 = self.T(p, "Okay I think? They made me " + self.task[0] + ".")
        self.t["interview"] = t1
        self.Q("single-hop", self.pick(["What did {S} have to do during the job interview?",
                                        "What task was {S} set when applying to {newco}?"]),
               [t1, t3], self.task[1])
        if self.rng.random() < 0.4:
            self.Q("temporal", "When was {S}'s interview at {newco}?", [t1], w.answer)
        return pre + [t1, t2, t3]

    def s_offer(self, d):
        p, o = self.p, self.o
        t1 = self.T(o, self.pick(["Any news from {newco}?", "Did they get back to you?"]))
        t2 = self.T(p, "They offered me the job!! " + self.perk[0])
        t3 = self.T(o, self.pick(REACT_POS))
        t4 = self.T(p, "Handing in my notice tomorrow. Wish me luck.")
        self.t["offer"] = t2
        self.Q("single-hop", self.pick(["What perk comes with {S}'s new position?",
                                        "What benefit convinced {S} about the new role?",
                                        "What did {S} get in the job offer from {newco}?",
                                        "What came with the job {S} was offered?"]), [t1, t2], self.perk[1])
        return [t1, t2, t3, t4]

    def s_first_day(self, d):
        p, o = self.p, self.o
        w = past(self.rng, d, kinds=("yesterday", "wd", "days"))
        self.first_when = w
        pre = []
        if self.topical and self.rng.random() < P_SHORT:
            pre = [self.T(o, self.pick(["Have you started at {newco} yet?", "So, {newco}! Have you started?"]))]
            t1 = self.T(p, "Yes, {rel}! My new manager, {mgr}, took the whole team out for lunch.", rel=w.phrase)
        else:
            t1 = self.T(p, "First day at {newco} was {rel}. My new manager, {mgr}, took the whole team out for lunch.",
                        rel=w.phrase)
        t2 = self.T(o, self.pick(REACT_POS))
        self.t["first"] = t1
        self.t["first_where"] = pre + [t1]
        self.Q("temporal", self.pick(["When did {S} start working at {newco}?", "When was {S}'s first day in the new job?"]),
               [t1], w.answer)
        self.Q("single-hop", self.pick(["Who is {S}'s boss at the new company?", "Who manages {S} now?",
                                        "Who is {S}'s new manager at {newco}?"]),
               [t1], self.mgr)
        self.ctx.facts.setdefault("jobs", []).append(dict(p=p, first=t1, day=w.day, newco=self.newco))
        return pre + [t1, t2]

    def s_lead(self, d):
        p, o = self.p, self.o
        t1 = self.T(p, "{mgr} asked me to lead " + self.project[0] + "!")
        t2 = self.T(o, self.pick(REACT_POS))
        t3 = self.T(p, "Bit scary, but it's exactly the kind of thing I left {company} for.")
        self.t["lead"] = t1
        self.t["lead3"] = t3
        self.Q("single-hop", self.pick(["What has {S} been put in charge of at work?",
                                        "What responsibility did {S}'s manager give {obj}?",
                                        "What did {mgr} ask {S} to lead?"]), [t1], self.project[1])
        return [t1, t2, t3]

    def finish(self):
        self.Q("multi-hop", self.pick(["Who was {S}'s boss before the job change, and who manages {obj} now?",
                                       "Who replaced {boss} as {S}'s manager, and at which company?"]),
               [self.t["unhappy"]] + self.t["first_where"], "now {mgr} at {newco}; before that {boss} at {company}")
        self.Q("open-domain", self.pick(["Does {S} seem happier at work after switching jobs?",
                                         "Is {S} likely happier at {newco} than {subj} was working for {boss}?"]),
               [self.t["unhappy"], self.t["lead"], self.t["lead3"]],
               "Yes, likely; {subj} was fed up with {boss} and is now excited to lead a project at {newco}.")
        if self.iv_when.exact and self.first_when.exact:
            self.Q("temporal", "How long after the interview did {S} start at {newco}?",
                   [self.t["interview"], self.t["first"]],
                   "%s (interview %s, first day %s)" % (span(self.iv_when.day, self.first_when.day),
                                                        self.iv_when.answer, self.first_when.answer))


PETS = {
    "dog": dict(desc=["A scruffy terrier mix", "A three-legged greyhound", "An elderly beagle",
                      "A very anxious collie cross"], q=["dog", "rescue dog", "pup"],
                mischief=[("ate one of my trainers", "one of {pos} trainers"),
                          ("stole a whole baguette off the counter", "a baguette from the counter"),
                          ("chewed through the TV remote", "the TV remote")]),
    "cat": dict(desc=["A one-eyed ginger cat", "A shy black cat", "A tabby kitten with enormous ears"],
                q=["cat", "rescue cat", "kitty"],
                mischief=[("knocked my favourite mug off the shelf", "{pos} favourite mug (knocked off a shelf)"),
                          ("shredded the new curtains", "the new curtains"),
                          ("sat on my laptop and emailed gibberish to my boss", "sent gibberish to {pos} boss from the laptop")]),
    "rabbit": dict(desc=["A lop-eared rabbit", "A huge grey rabbit"], q=["rabbit", "bunny"],
                   mischief=[("chewed through my phone charger", "the phone charger"),
                             ("dug a hole in the sofa cushion", "a sofa cushion")]),
}
PET_NAMES = ["Biscuit", "Noodle", "Pickle", "Mochi", "Pepper", "Olive", "Dumpling", "Ziggy", "Bean",
             "Waffles", "Pretzel", "Miso"]
SHELTERS = ["the Hillside Animal Rescue", "Second Chance Rescue", "the city shelter", "a farm rescue out in the countryside"]
VET = [("needs to lose a bit of weight, so no more treats", "needs to lose weight, so no more treats"),
       ("is older than the shelter said, more like eight", "older than the shelter said, about eight"),
       ("has a slight heart murmur, but nothing to worry about", "a slight heart murmur, nothing serious"),
       ("needs two teeth out, poor thing", "needs two teeth removed")]


class PetArc(Arc):
    steps = ("want", "adopt", "mischief", "vet")
    TALK = [
        ["until:adopt", (1, "Still looking at rescue {kind}s?"), (0, "Every night. There's one at {shelter} that looks like a potato.")],
        ["until:adopt", (0, "I've read three books about {kind}s this month."), (1, "That's commitment."), (0, "Or procrastination.")],
        ["from:adopt", (1, "How's {pet} settling in?"), (0, "Like {ppro} owns the place. Sleeps on my side of the bed.")],
        ["later:adopt", (0, "{pet} has a whole basket of toys now and ignores all of them."), (1, "Classic.")],
        ["later:adopt", (1, "Do the neighbours like {pet}?"), (0, "Everyone on the street knows {pobj} by name already.")],
        ["later:adopt", (0, "Bought {pet} a fancy bed. {Ppro} sleeps in the box it came in.", "a photo of a {kind} asleep in a cardboard box"),
         (1, "Ha, every time.")],
        ["later:adopt", (1, "Has anyone from {shelter} checked in on {pet}?"), (0, "They sent a card! I replied with about forty photos.")],
    ]

    def __init__(self, ctx, p, o):
        super().__init__(ctx, p, o)
        r = self.rng
        self.kind = r.choice(["dog", "dog", "cat", "cat", "rabbit"])
        k = PETS[self.kind]
        self.pg = r.choice("fm")
        ps, po, pp = pron(self.pg)
        self.pet = r.choice(PET_NAMES)
        self.sl.update(kind=self.kind, pet=self.pet, ppro=ps, Ppro=cap(ps), pobj=po, desc=r.choice(k["desc"]),
                       shelter=r.choice(SHELTERS))
        self.mis = r.choice(k["mischief"])
        self.vet = r.choice(VET)
        self.t = {}

    def anchors(self, step, s):
        if step in ("mischief", "vet"):
            return [(self.sl["shelter"], tail("from " + self.sl["shelter"],
                                              tuple(q.split()[-1] for q in PETS[self.kind]["q"])))]
        return []

    def idle_ok(self, s):
        return s > self.sessions[0]

    def qk(self):
        return self.pick(PETS[self.kind]["q"])

    def prepare(self, sessions, dates):
        super().prepare(sessions, dates)
        self.ctx.mentions.append((sessions[1] + 1, self.p, [
            self.f("{pet} is asleep on my feet as we speak."), self.f("{pet} woke me up at 5am again."),
            self.f("Took {pet} to the park, total chaos.")]))

    def s_want(self, d):
        p, o = self.p, self.o
        blocker = p.partner or "My landlord"
        t1 = self.T(p, "I keep scrolling through rescue {kind}s at night. Is that a red flag?")
        t2 = self.T(o, "Depends. Are you actually going to get one?")
        t3 = self.T(p, "%s needs convincing first." % blocker)
        return [t1, t2, t3]

    def s_adopt(self, d):
        p, o = self.p, self.o
        w = past(self.rng, d, kinds=("yesterday", "wd", "wd", "days", "weekend"))
        t1 = self.T(p, self.pick(["Guess who has a new flatmate as of {rel}!",
                                  "Okay, big news: {rel}, our home got one more resident.",
                                  "So {rel} we went to the shelter 'just to look' and ended up adopting."]),
                    rel=w.phrase)
        t2 = self.T(o, "Wait... did you get a {kind}?!")
        t3 = self.T(p, "{desc} from {shelter}. We've called {pobj} {pet}.",
                    "a photo of a %s curled up on a blanket" % self.kind if self.rng.random() < 0.7 else None)
        t4 = self.T(o, "I need to meet {pet} immediately.")
        self.t["adopt"] = (t1, t2, t3)
        self.Q("single-hop", self.pick(["What did {S} name {pos} new {qk}?", "What is {S}'s {qk} called?"]),
               [t2, t3], self.pet, qk=self.qk())
        self.Q("temporal", self.pick(["When did {S} adopt {pet}?", "When did {S} bring home {pos} new {qk}?"]),
               [t1, t3], w.answer, qk=self.qk())
        self.Q("single-hop", self.pick(["Where did {S} get {pet} from?", "Which rescue or shelter is {pet} from?"]),
               [t3], self.sl["shelter"])
        self.adopt_when = w
        return [t1, t2, t3, t4]

    def s_mischief(self, d):
        p, o = self.p, self.o
        t1 = self.T(p, "{pet} " + self.mis[0] + " today.")
        t2 = self.T(o, self.pick(["Hahaha nooo.", "Oh no, that's amazing.", "Ha, naughty!"]))
        t3 = self.T(p, "I can't even be cross, look at that face.")
        self.Q("single-hop", self.pick(["What did {S}'s {qk} destroy?", "What did {pet} ruin?"]), [t1],
               self.mis[1], qk=self.qk())
        return [t1, t2, t3]

    def s_vet(self, d):
        p, o = self.p, self.o
        w = past(self.rng, d, kinds=("yesterday", "wd", "days"))
        t1 = self.T(p, "Took {pet} to the vet {rel}. Turns out {ppro} " + self.vet[0] + ".", rel=w.phrase)
        t2 = self.T(o, self.pick(REACT_NEG + REACT_MILD))
        self.Q("single-hop", self.pick(["What did the vet say about {S}'s {qk}?", "What did {S} learn at the vet?"]),
               [t1], self.vet[1], qk=self.qk())
        if self.rng.random() < 0.4:
            self.Q("temporal", self.pick(["When did {S} take {pet} for a check-up?",
                                          "When did {S} take {pet} to the vet?"]), [t1], w.answer)
        return [t1, t2]

    def finish(self):
        t3 = self.t["adopt"][2]
        qq, qa = self.pick([("Would {S} be likely to buy a pet from a breeder?",
                             "Probably not; {subj} adopted {pet} from {shelter}."),
                            ("Is {S} likely to support animal rescue charities?",
                             "Likely yes; {subj} adopted {pet} from {shelter}.")])
        self.Q("open-domain", qq, [t3], qa)
        self.ctx.facts.setdefault("pets", []).append(dict(p=self.p, adopt=self.t["adopt"], day=self.adopt_when.day,
                                                          pet=self.pet))


DESTS = [
    dict(city="Lisbon", country="Portugal", hi=("The tram up to the castle at sunset. And the custard tarts, I had about thirty.",
         "the tram ride up to the castle at sunset and the custard tarts"),
         mishap=("someone pickpocketed my sunglasses on the tram", "sunglasses pickpocketed on a tram"), act="walking up hills and eating"),
    dict(city="Kyoto", country="Japan", hi=("We walked through the red gates up the mountain at dawn, nobody else there.",
         "walking through the red shrine gates at dawn"),
         mishap=("I left my jacket on the bullet train", "left a jacket on the bullet train"), act="temples and noodles"),
    dict(city="Marrakech", country="Morocco", hi=("A cooking class on a rooftop. I can make tagine now!",
         "a rooftop cooking class where {subj} learned to make tagine"),
         mishap=("got completely lost in the souks for two hours", "got lost in the souks for two hours"), act="markets and gardens"),
    dict(city="Reykjavik", country="Iceland", hi=("We bathed in a hot river in the middle of a valley. A river! That's hot!", "bathing in a hot river in a valley"),
         mishap=("the hire car got a flat tyre in the middle of nowhere", "a flat tyre on the hire car"), act="waterfalls and hot pools"),
    dict(city="Hoi An", country="Vietnam", hi=("The lantern festival on the river. And a tailor made me a suit in a day.",
         "the lantern festival and a suit tailored in a day"),
         mishap=("food poisoning on day two", "food poisoning"), act="street food and cycling"),
    dict(city="Edinburgh", country="Scotland", hi=("Climbing Arthur's Seat in a gale, I nearly blew away.", "climbing Arthur's Seat"),
         mishap=("the hotel lost our booking", "the hotel lost the booking"), act="castles and pubs"),
    dict(city="Cape Town", country="South Africa", hi=("Table Mountain, and penguins on the beach. Penguins!",
         "Table Mountain and the penguins on the beach"),
         mishap=("the cable car was shut for wind two days running", "the cable car was closed because of wind"), act="hiking and wine"),
    dict(city="Oaxaca", country="Mexico", hi=("The food. Seven kinds of mole. I'm a changed person.", "the food, especially seven kinds of mole"),
         mishap=("my suitcase went to Bogota without me", "the suitcase was lost (sent to Bogota)"), act="eating and markets"),
    dict(city="Budapest", country="Hungary", hi=("The thermal baths! Floating outside at night with a beer.", "the outdoor thermal baths at night"),
         mishap=("we missed the night train back and had to stay another day", "missed the night train home"), act="baths and cafes"),
    dict(city="Seville", country="Spain", hi=("A flamenco show in a tiny bar. Honestly life-changing.", "a flamenco show in a tiny bar"),
         mishap=("our flight home was delayed nine hours", "a nine-hour flight delay home"), act="tapas and palaces"),
    dict(city="Copenhagen", country="Denmark", hi=("We rented bikes and did the whole city in a day.", "cycling round the whole city in a day"),
         mishap=("everything cost a fortune, I'm broke now", "everything was very expensive"), act="bikes and pastries"),
    dict(city="Crete", country="Greece", hi=("Hiking the big gorge all the way down to the sea.", "hiking the gorge down to the sea"),
         mishap=("I lost a sandal on the ferry", "lost a sandal on the ferry"), act="hiking and swimming"),
    dict(city="Tbilisi", country="Georgia", hi=("A dinner with a local family that lasted five hours and eleven toasts.",
         "a five-hour dinner with a local family"),
         mishap=("a taxi driver took us to the wrong town", "a taxi took them to the wrong town"), act="sulphur baths and dumplings"),
    dict(city="Penang", country="Malaysia", hi=("The hawker stalls. I ate char kway teow three times a day.", "the hawker stall food"),
         mishap=("a monkey stole my sandwich at the botanic gardens", "a monkey stole a sandwich"), act="street food and street art"),
]
HOME_COUNTRY = {"Leeds": "England", "Manchester": "England", "London": "England", "Lagos": "Nigeria",
                "Osaka": "Japan", "Buenos Aires": "Argentina", "Dublin": "Ireland", "Toronto": "Canada",
                "Gothenburg": "Sweden", "Marseille": "France", "Auckland": "New Zealand", "Mexico City": "Mexico",
                "Oslo": "Norway", "Bangalore": "India", "Istanbul": "Turkey", "Berlin": "Germany",
                "Montreal": "Canada", "Seoul": "South Korea", "Melbourne": "Australia", "Lima": "Peru",
                "Amsterdam": "Netherlands", "Chicago": "USA", "Edinburgh": "Scotland", "Accra": "Ghana"}


class TripArc(Arc):
    steps = ("plan", "back")
    TALK = [
        ["from:plan", "before:back", (1, "Have you packed yet?"), (0, "I've packed sun cream and nothing else.")],
        ["from:plan", "before:back", (0, "I've been reading about {city} every night instead of sleeping."), (1, "Ha, that's the best bit.")],
        ["from:plan", "before:back", (1, "Got a list of places to eat in {city}?"), (0, "Three pages long. In a spreadsheet.")],
        ["from:back", (1, "Recovered from all the travelling?"), (0, "Not really. I keep waking up at odd hours.")],
        ["from:back", (0, "I miss {city} already."), (1, "Do it again!"), (0, "Don't tempt me.")],
        ["from:back", (1, "Would you do {country} again?"), (0, "In a heartbeat. Longer next time.")],
        ["from:back", (0, "I've got about nine hundred photos from {city} to sort.", "a photo of a busy street in {city}"), (1, "Send me the best ten."), (0, "Deal.")],
        ["from:back", (1, "Was {country} how you imagined it?"), (0, "Better, honestly. Louder, too.")],
    ]

    def idle_ok(self, s):
        return self.sessions[0] < s < self.sessions[1]

    def anchors(self, step, s):
        if step != "back":
            return []
        city, country = self.dest["city"], self.dest["country"]
        both = "%s in %s" % (city, country)

        def add_city(q):
            return q.replace(country, both, 1) if country in q and city not in q else None

        def add_country(q):
            if city not in q or country in q:
                return None
            if city + " trip" in q:
                return q.replace(city + " trip", "trip to " + both, 1)
            return q.replace(city, both, 1)
        return [(city, add_city), (country, add_country)]

    def __init__(self, ctx, p, o, dest):
        super().__init__(ctx, p, o)
        self.dest = dest
        self.sl.update(city=dest["city"], country=dest["country"], act=dest["act"])
        ctx.facts.setdefault("trip_arcs", []).append(self)

    max_days = 120

    def ok(self, idx, n, dates):
        # Trips never overlap: another trip is planned and over before or after this one.
        for other in self.ctx.facts.get("trip_arcs", []):
            sched = other.sched
            if other is not self and sched and not (idx[1] < sched[0] or idx[0] > sched[1]):
                return False
        return 2 <= idx[1] - idx[0] <= 4 and super().ok(idx, n, dates)

    def prepare(self, sessions, dates):
        super().prepare(sessions, dates)
        r = self.rng
        dp, db = dates
        self.end = past(r, db, kinds=("yesterday", "wd", "days"), after=dp + timedelta(days=4))
        length = r.randint(4, 9)
        start = self.end.day - timedelta(days=length)
        if start <= dp + timedelta(days=1):
            start = dp + timedelta(days=2)
        assert start < self.end.day
        self.start = start
        self.fut = future(r, dp, start)

    def s_plan(self, d):
        p, o = self.p, self.o
        t1 = self.T(p, self.pick(["We finally booked {city}! Flying out {when}.",
                                  "Booked it: {city}, leaving {when}. No going back now."]), when=self.fut.phrase)
        t2 = self.T(o, self.pick(["Jealous. What's the plan?", "Ooh! What are you going to do there?"]))
        t3 = self.T(p, "Mostly {act}. No alarms allowed.")
        self.plan_t = t1
        return [t1, t2, t3]

    def s_back(self, d):
        p, o = self.p, self.o
        dest = self.dest
        short = self.topical and self.rng.random() < P_SHORT
        if short:
            # The other person names the place; the answers do not.
            t0 = self.T(o, self.pick(["Are you back from {city}?", "Welcome back! How was {city}?",
                                      "How was {country}?", "Wait, are you home from {country} already?"]))
            t1 = self.T(p, self.pick(["Back {rel}! Best holiday in years.", "Got home {rel}. Still unpacking.",
                                      "Landed {rel}, I'm still half asleep."]), rel=self.end.phrase)
            t2 = self.T(o, self.pick(["Best bit?", "Tell me everything.", "So what was the highlight?"]))
        else:
            t0 = None
            t1 = self.T(p, self.pick(["Back from {city}! Got home {rel}.",
                                      "Back from {city}! Got home {rel}. Best holiday in years.",
                                      "Home from the {city} trip, landed {rel}."]), rel=self.end.phrase)
            t2 = self.T(o, self.pick(["And?? How was it?", "Welcome back! Best bit?", "Tell me everything."]))
        t3 = self.T(p, dest["hi"][0], "a photo taken in %s" % dest["city"] if self.rng.random() < 0.7 else None)
        t4 = self.T(o, self.pick(REACT_POS))
        t5 = self.T(p, self.pick(["Only drama: ", "Only thing that went wrong: ", "The one disaster: "])
                    + dest["mishap"][0] + ".")
        self.back_t, self.hi_t = t1, t3
        s, e = self.start, self.end.day
        self.Q("temporal", self.pick(["When did {S} get back from {country}?", "When did {S} get home from {city}?"]),
               [t1], self.end.answer)
        if s.month == e.month:
            self.Q("temporal", self.pick(["In which month did {S} travel to {country}?",
                                          "In which month was {S}'s {city} trip?"]), [self.plan_t, t1], fmonth(s))
        else:
            self.Q("temporal", self.pick(["In which months was {S} away in {country}?",
                                          "Which months did {S}'s {city} trip span?"]), [self.plan_t, t1],
                   "%s to %s" % (fmonth(s), fmonth(e)))
        self.Q("single-hop", self.pick(["What was the highlight of {S}'s trip to {country}?",
                                        "What did {S} enjoy most on holiday in {country}?",
                                        "What was the best bit of {S}'s {city} trip?"]), [t3] if short else [t1, t3],
               dest["hi"][1])
        self.Q("single-hop", self.pick(["What went wrong during {S}'s time in {country}?",
                                        "What drama did {S} have in {city}?"]), [t5] if short else [t1, t5],
               dest["mishap"][1])
        self.ctx.facts.setdefault("trips", []).append(dict(p=p, back=t1, where=t0 or t1, plan=self.plan_t,
                                                           dest=dest, start=s, end=e))
        return ([t0] if short else []) + [t1, t2, t3, t4, t5]


INJURIES = [
    dict(line="sprained my ankle stepping off a kerb", part="ankle", qa="What did the physio tell {S} about {pos} ankle?", short="sprained ankle",
         advice="Physio says no running or jumping for six weeks, plus lots of boring exercises.",
         ans="no running or jumping for six weeks", q="When did {S} hurt {pos} ankle?"),
    dict(line="did something horrible to my back lifting a washing machine", part="back", qa="What did the physio tell {S} to do for {pos} back?", short="back injury",
         advice="Physio says gentle walks only and nothing heavy for a month.",
         ans="gentle walks only and no heavy lifting for a month", q="When did {S} injure {pos} back?"),
    dict(line="came off my bike on wet cobbles and fractured my wrist", part="wrist", qa="How long does {S} have to keep the wrist in a cast?", short="broken wrist",
         advice="In a cast for five weeks. Typing one-handed, forgive the typos.",
         ans="wear a cast for five weeks", q="When did {S} break {pos} wrist?"),
    dict(line="pulled a hamstring sprinting for a bus", part="leg", qa="What did the physio say {S} should do about the hamstring?", short="pulled hamstring",
         advice="Three weeks of rest, then build back up slowly, the physio said.",
         ans="three weeks of rest, then a gradual return", q="When did {S} pull a muscle?"),
    dict(line="came down with a horrible flu", part="flu", qa="What did the doctor tell {S} to do about the flu?", short="flu",
         advice="The doctor signed me off for ten days and told me to actually rest.",
         ans="ten days off work and proper rest", q="When did {S} fall ill?"),
]


class IllnessArc(Arc):
    steps = ("injury", "advice", "back")
    max_days = 70
    TALK = [
        ["before:back", (1, "How are you managing with the {short}?"), (0, "Badly. I'm a terrible patient.")],
        ["before:back", (0, "I've watched every series on my list since the {short}."), (1, "Silver linings.")],
        ["before:back", (1, "Are you missing {noun}?"), (0, "So much. I watch other people doing it like a sad dog.")],
        ["from:advice", "before:back", (0, "The exercises are so boring I do them in front of the telly."), (1, "Whatever works.")],
        ["before:back", (1, "No {noun} for a while, then?"), (0, "Not for a while, no. I'm sulking about it.")],
        ["from:back", (1, "Did the {short} hold up?"), (0, "Mostly. A bit stiff the day after.")],
    ]

    def anchors(self, step, s):
        if step == "advice":
            return [(self.inj["short"], tail("after " + self.f("{pos} {short}")))]
        if step == "injury":
            return [(self.hob["noun"], tail("and have to take a break from " + self.hob["noun"]))]
        return []

    def idle_ok(self, s):
        return self.sessions[0] < s < self.sessions[2]

    def __init__(self, ctx, p, o):
        super().__init__(ctx, p, o)
        fits = INJURIES if p.hobbies[0] in ("running", "climbing", "cycling", "swimming", "gardening") \
            else [i for i in INJURIES if i["part"] in ("wrist", "flu")]
        self.inj = self.rng.choice(fits)
        self.hob = HOBBIES[p.hobbies[0]]
        self.sl.update(short=self.inj["short"], part=self.inj["part"], noun=self.hob["noun"])

    def s_injury(self, d):
        p, o = self.p, self.o
        w = past(self.rng, d, kinds=("yesterday", "wd", "days"))
        self.when = w
        t1 = self.T(p, "So I " + self.inj["line"] + " {rel}.", rel=w.phrase)
        t2 = self.T(o, self.pick(["Oh no!! Are you okay?", "Noooo. How bad is it?"]))
        t3 = self.T(p, "I'll live. Mostly just annoyed.")
        self.inj_t = t1
        self.Q("temporal", self.inj["q"], [t1], w.answer)
        return [t1, t2, t3]

    def s_advice(self, d):
        p, o = self.p, self.o
        t1 = self.T(o, "Feeling any better?" if self.inj["part"] == "flu" else "How's the {part}?")
        t2 = self.T(p, self.inj["advice"])
        t3 = self.T(o, self.pick(REACT_NEG + ["Be good and actually listen!"]))
        self.adv = (t1, t2)
        self.Q("single-hop", self.pick(["What was {S} told to do to recover?",
                                        "What recovery advice did {S} get from the professionals?",
                                        self.inj["qa"], self.inj["qa"]]),
               [t1, t2], self.inj["ans"])
        return [t1, t2, t3]

    def s_back(self, d):
        p, o = self.p, self.o
        w = past(self.rng, d, kinds=("yesterday", "wd", "days"))
        pre = []
        if self.topical and self.rng.random() < P_SHORT:
            pre = [self.T(o, self.pick(["Are you back to {noun} yet?", "Any {noun} yet, or still resting?"]))]
            t1 = self.T(p, "Yes! First go {rel}. Slow, but so happy.", rel=w.phrase)
        else:
            t1 = self.T(p, "First bit of {noun} since the {short}, {rel}! Slow, but so happy.", rel=w.phrase)
        t2 = self.T(o, self.pick(REACT_POS))
        self.Q("temporal", "When did {S} return to {qn} after {pos} {short}?", [t1], w.answer,
               qn=self.pick(self.hob["qn"]))
        self.Q("multi-hop", "Which activity did {S}'s {short} interrupt, and what had {subj} been told to do?",
               [self.adv[1]] + pre + [t1], "{noun}; %s" % self.inj["ans"])
        if self.when.exact and w.exact:
            self.Q("temporal", "How long was {S} away from {noun} because of the {short}?", [self.inj_t, t1],
                   "%s (%s to %s)" % (span(self.when.day, w.day), self.when.answer, w.answer))
        return pre + [t1, t2]


PROPOSALS = [("on top of a lighthouse", "on top of a lighthouse"),
             ("in the middle of a pub quiz, on the answer sheet", "on a pub quiz answer sheet"),
             ("at the airport arrivals gate", "at the airport arrivals gate"),
             ("on a rowing boat, and nearly dropped the ring in the lake", "on a rowing boat")]
WVENUES = [("in an old barn covered in fairy lights", "an old barn covered in fairy lights"),
           ("on a beach, everyone barefoot", "on a beach"),
           ("at the botanical gardens", "at the botanical gardens"),
           ("in our grandparents' village", "in {pos} grandparents' village"),
           ("on a boat on the river", "on a river boat")]
SPEECH = [("Everyone laughed at the right bits! I didn't faint!", "it went well; people laughed and {subj} didn't faint"),
          ("I forgot half of it and improvised. Apparently that was the best part.",
           "{subj} forgot half and improvised, and people loved it")]


class WeddingArc(Arc):
    steps = ("engaged", "role", "wedding")
    TALK = [
        ["before:wedding", (1, "How's the wedding planning going?"), (0, "{sib} has a spreadsheet with eleven tabs.")],
        ["from:engaged", (1, "Do you like {fiance}?"), (0, "Love {fiance}. Calm, funny, and puts up with {sib}.")],
        ["later:engaged", "before:wedding", (0, "Went shopping for wedding outfits with {sib}, four hours and nothing."), (1, "Ha, standard.")],
        ["later:engaged", (1, "Is {fiance}'s family nice?"), (0, "Huge. I've met about thirty of them and remember two names.")],
        ["later:engaged", "before:wedding", (0, "{sib} wants a live band and {fiance} wants a playlist."), (1, "Who's winning?"), (0, "The band. Obviously.")],
        ["from:wedding", (1, "Have you seen the photos yet?"), (0, "About four hundred of them. I'm blinking in most.", "a photo of a wedding party on some steps")],
        ["later:wedding", (0, "{sib} and {fiance} are back from the honeymoon, very tanned and smug."), (1, "As they should be.")],
    ]

    def anchors(self, step, s):
        if step in ("role", "wedding"):
            return [(self.fiance, tail("to " + self.fiance, ("wedding", "married")))]
        return []

    def idle_ok(self, s):
        return self.sessions[0] < s < self.sessions[2]

    def __init__(self, ctx, p, o):
        super().__init__(ctx, p, o)
        r = self.rng
        self.fiance = ctx.name()[0]
        self.prop = r.choice(PROPOSALS)
        self.venue = r.choice(WVENUES)
        self.role = r.choice(["maid of honour" if p.g == "f" else "best man", "a witness", "doing a reading"])
        self.speech = r.choice(SPEECH)
        self.sl.update(sib=p.sib, rel=p.sib_rel, fiance=self.fiance)

    def s_engaged(self, d):
        p, o = self.p, self.o
        t1 = self.T(p, "Family news: {sib} got engaged! {fiance} proposed " + self.prop[0] + ".")
        t2 = self.T(o, self.pick(REACT_POS))
        self.Q("single-hop", self.pick(["Where did {S}'s {rel} receive a marriage proposal?",
                                        "Where did {fiance} propose to {sib}?"]), [t1], self.prop[1])
        return [t1, t2]

    def s_role(self, d):
        p, o = self.p, self.o
        role = self.role
        t1 = self.T(p, "{sib} asked me to be " + role + "." if role != "doing a reading"
                    else "{sib} wants me doing a reading at the ceremony.")
        t2 = self.T(o, "Does that mean standing up in front of everyone?")
        t3 = self.T(p, "It does. I would honestly rather run a marathon backwards.")
        self.role_t = (t1, t2, t3)
        self.Q("single-hop", self.pick(["What role does {S} have at {pos} {rel}'s wedding?",
                                        "What did {sib} ask {S} to be at the wedding?"]), [t1],
               role if role != "doing a reading" else "to do a reading at the ceremony")
        self.Q("open-domain", self.pick(["Is {S} comfortable with public speaking?",
                                         "Does {S} enjoy standing up in front of everyone?"]), [t2, t3],
               "No; {subj} dreads standing up in front of people.")
        return [t1, t2, t3]

    def s_wedding(self, d):
        p, o = self.p, self.o
        w = past(self.rng, d, kinds=("yesterday", "wd", "weekend", "days"))
        att = "a photo of a couple cutting a cake" if self.rng.random() < 0.5 else None
        pre = []
        if self.topical and self.rng.random() < P_SHORT:
            pre = [self.T(o, self.pick(["How was {sib} and {fiance}'s big day?", "So, did {sib} and {fiance} do it?"]))]
            t1 = self.T(p, self.pick(["Perfect. It was {rel}, ", "They did! {Rel}, "]) + self.venue[0] + ".", att,
                        rel=w.phrase, Rel=cap(w.phrase))
        else:
            t1 = self.T(p, "{sib} and {fiance} got married {rel}, " + self.venue[0] + ".", att, rel=w.phrase)
        t2 = self.T(o, self.pick(["How did your bit go??", "And did you survive your part?"]))
        t3 = self.T(p, self.speech[0])
        self.Q("temporal", "When did {S}'s {rel} get married?", [t1], w.answer)
        self.Q("single-hop", "Where was {sib}'s wedding held?", [t1], self.venue[1])
        self.Q("multi-hop", "How did {S}'s part in the wedding go, given how {subj} felt about it beforehand?",
               [self.role_t[2], t2, t3], "{subj} had dreaded it, but " + self.speech[1])
        return pre + [t1, t2, t3]


SCHOOLS = ["Oakfield Primary", "St Brigid's", "Riverside School", "Hillcrest Primary", "Maple Grove School"]
CLASS_PETS = [("a tortoise called Gerald", "a tortoise called Gerald"), ("two stick insects", "two stick insects"),
              ("a very fat hamster", "a hamster"), ("an axolotl in a tank by the window", "an axolotl")]
PLAY_ROLES = [("a tree. A tree with one line", "a tree"), ("the wolf", "the wolf"),
              ("the narrator, so loads of lines", "the narrator"), ("a singing carrot", "a singing carrot")]


class KidsArc(Arc):
    steps = ("school", "teacher", "play")
    TALK = [
        ["from:school", (1, "Is {school} far from you?"), (0, "Ten minutes on foot. Twenty with {kid} stopping for every dog.")],
        ["later:school", (1, "Is {kid} settling in at {school}?"), (0, "Mostly. {Kpro} came home with paint in {kpos} hair, so something's happening.")],
        ["later:school", (0, "The {school} parents' group chat is a war zone."), (1, "About what?"), (0, "Nits. Always nits.")],
        ["later:school", (1, "Does {kid} like the school dinners?"), (0, "{Kpro} says the custard is medium. High praise.")],
        ["later:school", (0, "I have to make a book day costume for {kid} by next week."), (1, "Can you sew?"), (0, "I can staple.", "a photo of a cardboard costume held together with staples")],
        ["later:school", (1, "Has {kid} made friends at {school}?"), (0, "A best friend already, and a sworn enemy. Both called Alex.")],
    ]

    def anchors(self, step, s):
        if step in ("teacher", "play"):
            return [(self.school, tail("at " + self.school))]
        return []

    def idle_ok(self, s):
        return s > self.sessions[0]

    def __init__(self, ctx, p, o):
        super().__init__(ctx, p, o)
        r = self.rng
        kid, rel, age = p.kid
        ks, ko, kp = pron("m" if rel == "son" else "f")
        self.school = r.choice(SCHOOLS)
        self.teacher = ctx.name()[0]
        self.cpet = r.choice(CLASS_PETS)
        self.role = r.choice(PLAY_ROLES)
        self.sl.update(kid=kid, child=rel, kpro=ks, Kpro=cap(ks), kpos=kp, Kpos=cap(kp), school=self.school,
                       teacher=self.teacher)

    def prepare(self, sessions, dates):
        super().prepare(sessions, dates)
        d0, d1 = dates[0], dates[1]
        lim = (d1 - d0).days - 1
        self.start = d0 + timedelta(days=self.rng.randint(2, max(2, min(12, lim))))
        while self.start.weekday() >= 5:
            self.start -= timedelta(days=1)
        if self.start <= d0:
            self.start = d0 + timedelta(days=(7 - d0.weekday()) if d0.weekday() >= 4 else 1)
        self.fut = future(self.rng, d0, self.start)

    def s_school(self, d):
        p = self.p
        t1 = self.T(p, self.pick(["{kid} starts at {school} {when}. I'm more nervous than {kpro} is.",
                                  "{kid} starts at the new school, {school}, {when}. I'm more nervous than {kpro} is."]),
                    when=self.fut.phrase)
        t2 = self.T(self.o, self.pick(["Aww, big step!", "Ah, {kid} will be fine!"]))
        self.Q("temporal", self.pick(["When did {S}'s {child} start at the new school?",
                                      "When was {kid}'s first day at {school}?"]), [t1], self.fut.answer)
        return [t1, t2]

    def s_teacher(self, d):
        p, o = self.p, self.o
        t1 = self.T(o, "How's {kid} finding school?")
        t2 = self.T(p, "Loves it. {Kpos} teacher, {teacher}, keeps " + self.cpet[0] + " in the classroom.")
        self.Q("single-hop", "What animal lives in {kid}'s classroom?", [t2], self.cpet[1])
        self.Q("single-hop", self.pick(["Who teaches {S}'s {child}?", "Who is {kid}'s teacher?"]), [t1, t2],
               self.teacher)
        return [t1, t2, self.T(o, self.pick(REACT_POS))]

    def s_play(self, d):
        p, o = self.p, self.o
        t1 = self.T(p, "{kid} got a part in the school play! {Kpro}'s " + self.role[0] + ".")
        t2 = self.T(o, self.pick(REACT_POS))
        self.Q("single-hop", "What part is {S}'s {child} playing in the school show?", [t1], self.role[1])
        return [t1, t2]


PLANS = [
    dict(plan="I'm going to sell the car. We barely use it and the insurance is daylight robbery.",
         talk=[[(1, "How much is the car insurance anyway?"), (0, "Don't ask. Nearly more than the car is worth.")],
               [(0, "The car's been parked outside for two weeks without moving."), (1, "Does it still start?"), (0, "Just about.")]],
         change="Remember I was going to sell the car? Decided to keep it. {reason}",
         reasons=[("My mum needs lifts to her appointments every week now.", "{pos} mum needs weekly lifts"),
                  ("We did the maths and the trains would cost more.", "the trains would cost more"),
                  ("Found insurance for half the price.", "{subj} found much cheaper insurance")],
         q1="Does {S} still own a car?", q1b="Did {S} sell the car in the end?", a1b="No; {subj} kept it because {short}.", a1="Yes; {subj} decided not to sell it because {short}.",
         q2="What was {S}'s original plan for the car, and what changed {pos} mind?",
         a2="{Subj} planned to sell it because of the insurance cost, then kept it because {short}."),
    dict(plan="We're painting the living room deep forest green. I've decided.",
         talk=[[(1, "Have you bought the paint yet?"), (0, "I've got nine tester pots lined up on the windowsill.")],
               [(0, "The living room is all dust sheets and masking tape."), (1, "Very artistic.")]],
         change="Painted the lounge in the end... grey. {reason}",
         reasons=[("The green test patch looked like a swamp.", "the green test patch looked like a swamp"),
                  ("The green made the room feel like a cave.", "the green made the room feel like a cave")],
         q1="What colour did {S} end up choosing for the living room?", q1b="What colour did {S} paint the lounge?", a1b="grey (instead of the planned green)", a1="grey (instead of the planned green)",
         q2="Which colour did {S} first want for the living room, and why did {subj} drop it?",
         a2="deep forest green; {short}"),
    dict(plan="I'm cancelling my gym membership, I haven't been since spring.",
         talk=[[(1, "Do you even remember where the gym is?"), (0, "Vaguely. Near the big roundabout.")],
               [(0, "The gym keeps emailing me motivational quotes."), (1, "Ha, passive aggressive.")]],
         change="Didn't cancel the gym after all. {reason}",
         reasons=[("They offered me half price to stay and I'm weak.", "{subj} was offered half price"),
                  ("They opened a sauna, so I'm back.", "they opened a sauna")],
         q1="Is {S} still paying for the gym?", q1b="Did {S} cancel the gym membership?", a1b="No; {subj} stayed because {short}.", a1="Yes; {subj} stayed because {short}.",
         q2="Why did {S} want to cancel the gym, and why did {subj} stay?",
         a2="{Subj} hadn't been since spring; stayed because {short}."),
    dict(plan="I've signed up for Spanish lessons, I want to be chatty by summer.",
         talk=[[(1, "How are the lessons going?"), (0, "I can order a coffee and apologise. That's about it.")],
               [(0, "We get homework. Actual homework."), (1, "Ha, back to school.")]],
         change="Plot twist: switched from Spanish to Portuguese. {reason}",
         reasons=[("{friend}'s wedding is in Brazil next year.", "{friend}'s wedding is in Brazil"),
                  ("The Portuguese teacher is way funnier.", "the Portuguese teacher is funnier")],
         q1="Which language is {S} studying now?", q1b="Did {S} stick with the Spanish lessons?", a1b="No; {subj} switched to Portuguese.", a1="Portuguese (switched from Spanish)",
         q2="What language did {S} start with, and why did {subj} change?", a2="Spanish; switched because {short}"),
    dict(plan="I'm going to shave my head for the hospital charity.",
         talk=[[(1, "How much have you raised for the hospital so far?"), (0, "A decent amount, mostly from my aunties.")],
               [(0, "Everyone at work has offered to hold the clippers."), (1, "Ha, so helpful.")]],
         change="Chickened out of the head shave. {reason}",
         reasons=[("Did a sponsored silence instead, which was honestly harder.", "a sponsored silence"),
                  ("Did a sponsored swim instead. Forty lengths.", "a sponsored swim of forty lengths")],
         q1="What did {S} end up doing for the hospital fundraiser?", q1b="What did {S} do instead of the head shave?", a1b="{short}", a1="{short} (instead of shaving {pos} head)",
         q2="What fundraising stunt did {S} abandon, and what did {subj} do instead?",
         a2="shaving {pos} head; did {short} instead"),
    dict(plan="Thinking of getting a motorbike to commute. Very midlife crisis, I know.",
         talk=[[(1, "Do you even have a licence for a motorbike?"), (0, "Not yet. There's a test, apparently. Several.")],
               [(0, "The trains have been a disaster all month."), (1, "So that's what started this.")]],
         change="Scrapped the motorbike idea. {reason}",
         reasons=[("Bought an e-bike instead, my mum is very relieved.", "an e-bike"),
                  ("Got a season ticket for the train instead. Boring but safe.", "a train season ticket")],
         q1="What did {S} get for commuting in the end?", q1b="What did {S} buy instead of a motorbike?", a1b="{short}", a1="{short} (not a motorbike)",
         q2="What vehicle did {S} consider for commuting, and what did {subj} choose instead?",
         a2="a motorbike; chose {short} instead"),
]


class PlanArc(Arc):
    steps = ("plan", "change")

    def talk_pool(self):
        return [["until:change"] + ex for ex in self.pl["talk"]]

    def __init__(self, ctx, p, o, plan):
        super().__init__(ctx, p, o)
        self.pl = plan
        self.reason = self.rng.choice(plan["reasons"])
        self.sl.update(friend=p.friend)
        self.sl["short"] = self.f(self.reason[1])

    def s_plan(self, d):
        p, o = self.p, self.o
        t1 = self.T(p, self.pl["plan"])
        t2 = self.T(o, self.pick(["Really? Big decision.", "Whoa. Are you sure?", "Bold!", "Huh, okay!"]))
        self.plan_t = t1
        return [t1, t2]

    def s_change(self, d):
        p, o = self.p, self.o
        t1 = self.T(p, self.pl["change"].replace("{reason}", self.reason[0]))
        t2 = self.T(o, self.pick(["Ha, I knew it.", "Honestly, good call.", "Classic you.", "Makes sense!"]))
        qq, qa = self.pick([(self.pl["q1"], self.pl["a1"]), (self.pl["q1b"], self.pl["a1b"])])
        self.Q("single-hop", qq, [t1], qa)
        self.Q("multi-hop", self.pl["q2"], [self.plan_t, t1], self.pl["a2"])
        return [t1, t2]


BOOKS = [("The Salt Road", "Mara Ellison", "a family of salt traders crossing the Sahara", "desert traders"),
         ("Small Hours", "Daniel Achebe", "a night-shift nurse who solves a murder", "a hospital murder mystery"),
         ("The Lighthouse Ledger", "Ines Varga", "a lighthouse keeper's logbook found a hundred years later", "an old logbook"),
         ("Nine Rivers", "Tom Halloran", "nine rivers and the towns along them", "rivers and riverside towns"),
         ("A Map of Quiet Things", "Yuki Sato", "a grieving mapmaker who walks across Japan", "a grieving cartographer"),
         ("The Orchard Year", "Bea Lindqvist", "a year running a failing apple orchard", "running a struggling farm"),
         ("Glass Houses", "Ravi Menon", "an architect rebuilding a town after an earthquake", "rebuilding after a disaster"),
         ("Platform Four", "Clara Dupont", "strangers stuck at a train station in a snowstorm", "people stranded by snow"),
         ("Tidewater", "Amaka Eze", "two sisters running a ferry", "siblings who run a boat service"),
         ("The Clockmaker's Apprentice", "Henrik Vos", "a boy apprenticed to a clockmaker in old Prague", "an apprentice in a workshop"),
         ("Below the Ice", "Sara Qureshi", "a research station in Antarctica where people start vanishing", "disappearances at a polar base")]
OPINIONS = [("Couldn't put it down, stayed up till 3.", "loved it; stayed up until 3am reading it", "Yes, likely; {subj} loved {title}."),
            ("Honestly? Bored me stiff after the first half.", "found it boring after the first half", "Probably not; {subj} found {title} boring."),
            ("The ending made me cry on the tram.", "found it very moving; the ending made {obj} cry", "Yes, probably; {title} moved {obj} to tears."),
            ("Good, but about two hundred pages too long.", "liked it but thought it was far too long", "Maybe; {subj} liked {title} but found it too long.")]


class BookArc(Arc):
    steps = ("reco", "read")
    TALK = [
        ["until:read", (0, "I looked up {author}, there's a whole backlist."), (1, "That one's the best, honestly.")],
        ["until:read", (1, "It's a proper doorstop, {title}. Worth it."), (0, "My arms are ready.")],
        ["from:read", (0, "I'm passing my copy on to my mum next."), (1, "She'll have opinions.")],
        ["from:read", (1, "Glad you tried {author}."), (0, "Thanks for the tip, honestly.")],
    ]

    def anchors(self, step, s):
        return [(self.book[1], tail("by " + self.book[1]))] if step == "read" else []

    def __init__(self, ctx, p, o, book):
        super().__init__(ctx, p, o)
        self.book = book
        self.op = self.rng.choice(OPINIONS)
        self.sl.update(title=book[0], author=book[1], about=book[2], qabout=book[3])

    def s_reco(self, d):
        p, o = self.p, self.o
        t1 = self.T(o, self.pick(["Have you read {title} by {author}? It's about {about}. You'd love it.",
                                  "You should read {title}, it's {author}'s one about {about}."]))
        t2 = self.T(p, self.pick(["Ooh, no! Adding it to the list.", "Noted. My pile of books is getting dangerous."]))
        self.reco_t = t1
        return [t1, t2]

    def s_read(self, d):
        p, o = self.p, self.o
        w = past(self.rng, d, kinds=("yesterday", "wd", "days"))
        pre = []
        if self.topical and self.rng.random() < P_SHORT:
            pre = [self.T(o, self.pick(["Did you ever get round to {title}?", "So, {title}? Verdict?"]))]
            t1 = self.T(p, "Finished it {rel}. " + self.op[0], rel=w.phrase)
        else:
            t1 = self.T(p, "Finished {title} {rel}. " + self.op[0], rel=w.phrase)
        t2 = self.T(o, self.pick(REACT_MILD + REACT_POS))
        self.Q("single-hop", "What did {S} think of {title}?", [t1], self.op[1])
        self.Q("multi-hop", "What was {S}'s verdict on the book {O} suggested about {qabout}?",
               [self.reco_t, t1], self.op[1])
        self.Q("open-domain", "Would {S} likely pick up another novel by {author}?", [self.reco_t, t1], self.op[2])
        if self.rng.random() < 0.35:
            self.Q("temporal", "When did {S} finish reading {title}?", [t1], w.answer)
        return pre + [t1, t2]


CUISINES = [("Ethiopian", "injera with the spicy lentils"), ("Georgian", "cheese boat bread"),
            ("Korean", "kimchi pancakes"), ("Peruvian", "ceviche"), ("Lebanese", "lamb kibbeh"),
            ("Sichuan", "dan dan noodles"), ("Neapolitan", "fried pizza"), ("Vietnamese", "bun cha")]


class RestaurantArc(Arc):
    steps = ("meal",)
    TALK = [
        [(1, "Was there a queue?"), (0, "Forty minutes of it. Worth it.")],
        [(0, "We're already planning a second visit."), (1, "High praise.")],
        [(1, "Is it expensive?"), (0, "Not bad at all for the amount of food.")],
        [(0, "{comp} wants to learn to cook it now."), (1, "Good luck to {comp}!")],
    ]

    def __init__(self, ctx, p, o, cuisine):
        super().__init__(ctx, p, o)
        self.cu = cuisine
        self.sl.update(cuisine=cuisine[0], dish=cuisine[1], comp=p.partner or p.friend)

    def s_meal(self, d):
        p, o = self.p, self.o
        w = past(self.rng, d, kinds=("yesterday", "wd", "wd", "days"))
        pre = []
        if self.topical and self.rng.random() < P_SHORT:
            pre = [self.T(o, self.pick(["Did you ever try that new {cuisine} place?", "Have you been to the {cuisine} place yet?"]))]
            t1 = self.T(p, "Finally, {rel}! {comp} came too.", rel=w.phrase)
        else:
            t1 = self.T(p, "{comp} and I finally tried that new {cuisine} place {rel}.", rel=w.phrase)
        t2 = self.T(o, self.pick(["And? Worth the hype?", "Ooh, any good?"]))
        t3 = self.T(p, "The {dish}. Unreal. Everything else was fine.",
                    "a photo of a plate of food on a wooden table" if self.rng.random() < 0.5 else None)
        self.Q("single-hop", "Which dish did {S} rave about at the new {cuisine} restaurant?", [t3] if pre else [t1, t3],
               self.cu[1])
        self.Q("temporal", self.pick(["When did {S} eat at the new {cuisine} place?",
                                      "When did {S} go out for {cuisine} food with {comp}?"]), [t1], w.answer)
        return pre + [t1, t2, t3]


class DietArc(Arc):
    steps = ("diet",)
    TALK = [
        [(1, "So are you fully vegetarian now?"), (0, "Fully. It's been easier than I thought.")],
        [(1, "What do you even eat now?"), (0, "Lentils. So many lentils. And halloumi.", "a photo of a bowl of lentil curry")],
        [(0, "Everyone keeps asking about my protein."), (1, "Ha, classic.")],
    ]

    def s_diet(self, d):
        p, o = self.p, self.o
        m = d.replace(day=1)
        for _ in range(self.rng.randint(1, 3)):
            m = (m - timedelta(days=1)).replace(day=1)
        reason = self.pick(["Watched a documentary and that was that.",
                            "My cholesterol was high and the doctor scared me.",
                            "Mostly for the planet. Partly because I can't cook meat properly."])
        t1 = self.T(p, "Fun fact: I haven't eaten meat since the start of {m}. " + reason,
                    m=MONTHS[m.month - 1])
        t2 = self.T(o, "Whoa! Do you miss it?")
        t3 = self.T(p, "Only bacon. Mostly bacon.")
        self.Q("open-domain", self.pick(["Would {S} enjoy being taken to a steakhouse for {pos} birthday?",
                                         "Would {S} eat the meat at a summer barbecue?"]), [t1],
               "Probably not; {subj} stopped eating meat at the start of %s." % fmonth(m))
        self.Q("temporal", "Since when has {S} been vegetarian?", [t1], "since the start of %s" % fmonth(m))
        return [t1, t2, t3]


COWORKERS = [
    dict(intro="My coworker {c} has started training for a marathon. In a dinosaur costume. For charity.",
         update="{c} did it! Finished the marathon in the dinosaur suit and raised over two thousand.",
         q1="What costume is {S}'s colleague wearing for the charity run?", a1="a dinosaur costume",
         q2="How much did {S}'s costumed colleague raise in the end?", a2="over two thousand",
         q2b="How much did {c} raise running the marathon in costume?"),
    dict(intro="{c} from accounts brings homemade kimchi for the whole floor every Monday.",
         update="Big news at work: {c} quit to open a little kimchi shop near the station!",
         q1="What does {S}'s colleague {c} bring into the office?", a1="homemade kimchi, every Monday",
         q2="What did {S}'s food-sharing coworker go on to do?", a2="quit to open a kimchi shop near the station",
         q2b="What did {c}, who brings food to the office, do next?"),
    dict(intro="{c} who sits next to me plays bass in a wedding band at the weekends.",
         update="{c}'s band got booked for a proper festival! Second stage, but still.",
         q1="What does {S}'s deskmate do at weekends?", a1="plays bass in a wedding band",
         q2="What happened with the band that {S}'s colleague plays in?", a2="it was booked for a festival (second stage)",
         q2b="What did {S}'s bass-playing colleague's band get booked for?"),
    dict(intro="{c} on my team just got back from six months at a research base in Antarctica. As you do.",
         update="{c} is giving a talk about penguins at the library, I said I'd go.",
         q1="Where had {S}'s teammate {c} spent six months?", a1="at a research base in Antarctica",
         q2="What is the talk by {S}'s polar colleague about?", a2="penguins",
         q2b="What is {c} giving a talk about at the library?"),
    dict(intro="{c} at work is learning Icelandic for absolutely no reason.",
         update="{c} passed an Icelandic exam and is actually moving to Reykjavik!",
         q1="What language is {S}'s coworker {c} learning?", a1="Icelandic",
         q2="Where is {S}'s language-learning colleague moving?", a2="Reykjavik",
         q2b="Where is {c} moving after the Icelandic exam?"),
]


class CoworkerArc(Arc):
    steps = ("intro", "update")
    TALK = [
        [(1, "Your office sounds like a sitcom."), (0, "Honestly, some days it is.")],
        ["later:intro", (0, "{c} says hi, by the way. I talk about you at work."), (1, "Ha, hi {c}!")],
        [(1, "Does {c} ever do anything normal?"), (0, "Never. That's the whole charm.")],
    ]

    def __init__(self, ctx, p, o, cw):
        super().__init__(ctx, p, o)
        self.cw = cw
        self.sl.update(c=ctx.name()[0])

    def s_intro(self, d):
        p, o = self.p, self.o
        t1 = self.T(p, self.cw["intro"])
        t2 = self.T(o, self.pick(["Ha, amazing.", "Of course they do.", "Love that.", "Wait, really?"]))
        self.intro_t = t1
        self.Q("single-hop", self.cw["q1"], [t1], self.cw["a1"])
        return [t1, t2]

    def s_update(self, d):
        p, o = self.p, self.o
        t1 = self.T(p, self.cw["update"])
        t2 = self.T(o, self.pick(REACT_POS))
        self.Q("multi-hop", self.pick([self.cw["q2"], self.cw["q2b"]]), [self.intro_t, t1], self.cw["a2"])
        return [t1, t2]


SIB_JOBS = [("{sib} just passed {sp_pos} final exams, {sp}'s officially a pharmacist!", "a pharmacist"),
            ("{sib} got promoted to head chef, so now {sp} never sleeps.", "a head chef"),
            ("{sib} started as a paramedic, first night shift was brutal apparently.", "a paramedic"),
            ("{sib} has gone freelance shooting weddings.", "a freelance wedding photographer"),
            ("{sib} just qualified as a pilot, flying little planes out to the islands.", "a pilot"),
            ("{sib} got a job teaching maths at our old school, which is deeply weird.", "a maths teacher")]
SIB_NEWS = [("{sib} is moving to {far} for work, leaving {when}.", "moving to {far}",
             "Where is {S}'s {rel} relocating to?", None, "{far}"),
            ("{sib} had a baby {rel_t}! A little girl called {baby}.", "had a baby girl called {baby}",
             "What is the name of {S}'s new niece?", "When was {S}'s niece born?", "{baby}"),
            ("{sib} had a baby {rel_t}! A little girl called {baby}.", "had a baby girl called {baby}",
             "What did {sib} call {sp_pos} baby?", "When did {S}'s {rel} {sib} have a baby?", "{baby}"),
            ("{sib} bought a van and is converting it into a camper. The family thinks {sp}'s lost it.",
             "converting a van into a camper", "What project has {S}'s {rel} taken on?", None,
             "converting a van into a camper"),
            ("{sib} ran {sp_pos} first ultramarathon, fifty kilometres through the hills, {rel_t}.",
             "ran a 50 km ultramarathon", "What endurance event did {S}'s {rel} complete?",
             "When did {S}'s {rel} run an ultramarathon?", "a 50 km ultramarathon")]


class SiblingArc(Arc):
    steps = ("job", "news")
    TALK = [
        [(1, "How's {sib} doing?"), (0, "Good! Busy. We finally had a proper phone call.")],
        [(0, "{sib} and I were on the phone for two hours."), (1, "Sibling catch-ups are the best.")],
        [(0, "Mum keeps asking {sib} and me when we're visiting."), (1, "Ha, classic mum.")],
    ]

    def live(self, x):
        return True

    def __init__(self, ctx, p, o):
        super().__init__(ctx, p, o)
        r = self.rng
        sp, _, spp = pron(p.sib_g)
        self.job = r.choice(SIB_JOBS)
        self.news = r.choice(SIB_NEWS)
        self.sl.update(sib=p.sib, rel=p.sib_rel, sp=sp, sp_pos=spp, far=r.choice(FAR_CITIES),
                       baby=ctx.name("f")[0])

    def intro(self):
        return self.pick(["", "", "Update on my {rel}: ", "Oh, and my {rel}! "])

    def s_job(self, d):
        p, o = self.p, self.o
        t1 = self.T(p, self.intro() + self.job[0])
        t2 = self.T(o, self.pick(REACT_POS + ["Tell {sib} congrats from me!"]))
        self.job_t = t1
        self.Q("single-hop", self.pick(["What does {S}'s {rel} do for a living?", "What is {sib}'s profession?",
                                        "What job does {S}'s {rel} have now?"]), [t1], self.job[1])
        return [t1, t2]

    def s_news(self, d):
        p, o = self.p, self.o
        line, ans, q1, qt, a1 = self.news
        w = past(self.rng, d, kinds=("yesterday", "wd", "days"))
        fut = future(self.rng, d, d + timedelta(days=self.rng.randint(9, 50)))
        t1 = self.T(p, self.intro() + line, rel_t=w.phrase, when=fut.phrase)
        t2 = self.T(o, self.pick(["Aww, congratulations to them!", "A baby! Send them my love."] if "baby" in line
                                 else REACT_POS + REACT_MILD))
        self.Q("single-hop", q1, [t1], a1)
        if qt:
            self.Q("temporal", qt, [t1], w.answer)
        elif "{when}" in line:
            self.Q("temporal", "When is {S}'s {rel} leaving for {far}?", [t1], fut.answer)
        self.Q("multi-hop", self.pick(["What does {S}'s {rel} do for work, and what other news did {S} share about {sp_obj}?",
                                       "What is {sib}'s job, and what else is {sp} up to?"]),
               [self.job_t, t1], self.job[1] + "; " + self.f(ans), sp_obj=pron(p.sib_g)[1])
        return [t1, t2]


# --------------------------------------------------------------------------
# Cross-arc questions

def cross_questions(ctx):
    a, b = ctx.people
    q = ctx.q
    trips = ctx.facts.get("trips", [])
    if len(trips) >= 2:
        t1, t2 = sorted(trips[:2], key=lambda t: t["start"])
        p1, p2 = t1["p"], t2["p"]
        c1, c2 = t1["dest"]["country"], t2["dest"]["country"]
        if p1 is p2:
            sl = p1.slots()
            q("multi-hop", ctx.rng.choice(["Which two countries did %s visit on holiday?",
                                           "Where did %s go on %s two trips?" % ("%s", sl["pos"])]) % p1.name,
              [t1["where"], t2["where"]],
              "%s (%s) and %s (%s)" % (c1, t1["dest"]["city"], c2, t2["dest"]["city"]))
            q("temporal", "Which trip did %s take first, %s or %s?" % (
                p1.name, *(ctx.rng.choice([(c2, c1), (t2["dest"]["city"], t1["dest"]["city"])]))),
              [t1["plan"], t1["back"], t2["plan"], t2["back"]],
              "%s (back %s), before %s (back %s)" % (c1, fdate(t1["end"]), c2, fdate(t2["end"])))
        else:
            q("multi-hop", "Where did %s and %s each go on holiday?" % (a.name, b.name), [t1["where"], t2["where"]],
              "%s went to %s, %s; %s went to %s, %s" % (p1.name, t1["dest"]["city"], c1, p2.name,
                                                        t2["dest"]["city"], c2))
            q("temporal", ctx.rng.choice(["Who went travelling first, %s or %s?" % (p2.name, p1.name),
                                          "Who went on holiday first, %s to %s or %s to %s?" % (
                                              p2.name, t2["dest"]["city"], p1.name, t1["dest"]["city"])]),
              [t1["plan"], t1["back"], t2["plan"], t2["back"]],
              "%s (to %s, back %s), before %s (to %s)" % (p1.name, c1, fdate(t1["end"]), p2.name, c2))
    for mv in ctx.facts.get("moves", []):
        for pet in ctx.facts.get("pets", []):
            if pet["p"] is not mv["p"]:
                continue
            p = pet["p"]
            if pet["day"] > mv["day"] + timedelta(days=5):
                q("multi-hop", "Which neighbourhood was %s living in when %s adopted %s?" % (p.name, p.subj, pet["pet"]),
                  [mv["signed"], mv["keys"], pet["adopt"][0]], mv["new"])
            elif pet["day"] + timedelta(days=5) < mv["day"]:
                q("temporal", "Did %s adopt %s before or after moving to %s?" % (p.name, pet["pet"], mv["new"]),
                  [mv["keys"], pet["adopt"][0], pet["adopt"][2]], "before (adopted %s, moved %s)" % (fdate(pet["day"]), fdate(mv["day"])))
        for jb in ctx.facts.get("jobs", []):
            if jb["p"] is not mv["p"] or abs((jb["day"] - mv["day"]).days) < 6:
                continue
            p = jb["p"]
            rel = "before" if jb["day"] < mv["day"] else "after"
            q("temporal", "Did %s start at %s before or after moving house?" % (p.name, jb["newco"]),
              [jb["first"], mv["keys"]], "%s (started %s, moved %s)" % (rel, fdate(jb["day"]), fdate(mv["day"])))
    starts = ctx.facts.get("starts", [])
    if len(starts) == 2 and abs((starts[0][3].day - starts[1][3].day).days) > 7:
        s1, s2 = sorted(starts, key=lambda s: s[3].day)
        q("temporal", "Who took up a new hobby first, %s (%s) or %s (%s)?" % (
            a.name, HOBBIES[a.hobbies[1]]["noun"], b.name, HOBBIES[b.hobbies[1]]["noun"]), [s1[2], s2[2]],
          "%s (%s, %s) before %s (%s, %s)" % (s1[0].name, HOBBIES[s1[1]]["noun"], s1[3].answer,
                                              s2[0].name, HOBBIES[s2[1]]["noun"], s2[3].answer))


# --------------------------------------------------------------------------
# Filler: small talk that answers no question. X starts, Y answers.
# {today} is the real weekday of the session; {wd}, {wd2}, {month}, {nth} are
# random time expressions that are never evidence.

OPENERS = [
    [(0, "Hey {Y}! How was your week?"), (1, "Hey! Pretty good, busy busy. Yours?"), (0, "Not bad at all.")],
    ["am", (0, "Morning! You around?"), (1, "Yep, just made coffee. What's up?")],
    [(0, "Hiya, long time no chat!"), (1, "I know, sorry! It's been chaos. How are you?"), (0, "Good, tired but good.")],
    ["pm", (0, "Evening! Got a minute?"), (1, "Always. What's new?")],
    [(0, "Hi {Y}, how's things?"), (1, "Not bad! Just got home.")],
    [(0, "Hey hey"), (1, "Heyyy, how are you doing?"), (0, "Alright! You?"), (1, "Can't complain.")],
    [(0, "Happy {today}!"), (1, "Ha, is that a thing?"), (0, "It is now.")],
    [(0, "Are you free to chat?"), (1, "Yes! Perfect timing, just sat down.")],
    [(0, "Hello stranger."), (1, "Haha hi! Sorry, I've been terrible at replying.")],
    [(0, "How's your {today} going?"), (1, "Slowly. Yours?"), (0, "Same, honestly.")],
    [(0, "You alive?"), (1, "Barely! What's up with you?")],
]
CLOSERS = [
    ["pm", (0, "Anyway, I should go, dinner's nearly ready."), (1, "Go go! Talk soon."), (0, "Bye!")],
    ["pm", (0, "Right, I need to sleep. Night!"), (1, "Night night!")],
    ["am", (0, "Right, I'd better actually start my day."), (1, "Go! Have a good one.")],
    [(0, "Ok I have to run, meeting in five."), (1, "Good luck! Speak later.")],
    [(0, "This was nice. Chat next week?"), (1, "Definitely.")],
    [(0, "Battery's dying, talk soon!"), (1, "Bye!")],
    [(0, "Okay, back to work. Ugh."), (1, "You've got this.")],
    [(0, "I'm going to go and be productive. Or nap."), (1, "Nap. Obviously nap."), (0, "Ha, bye!")],
    [(0, "Talk later?"), (1, "Yes! Take care.")],
]
SMALL = [
    [(0, "It hasn't stopped raining here since {wd}."), (1, "Ugh. Send some my way, it's so dry here."), (0, "Ha, deal.")],
    [(0, "I'm so tired today."), (1, "Bad night?"), (0, "Neighbour's car alarm at 4am. Twice.")],
    [(0, "Have you watched anything good lately?"), (1, "Rewatching an old sitcom for the fifth time. Comfort TV."), (0, "Honestly, respect.")],
    ["am", (0, "Third coffee of the day and it's not even eleven."), (1, "Haha, rookie numbers.")],
    [(0, "The bus was twenty minutes late again this morning."), (1, "Classic. Did anyone notice?"), (0, "Nope. Walked in behind my boss, who was also late.")],
    [(0, "I've got the dentist on {wd}, dreading it."), (1, "Just a check-up?"), (0, "Supposedly. We'll see.")],
    [(0, "Our boiler packed in on {wd} and nobody can come till {wd2}."), (1, "Nooo, cold showers?"), (0, "Kettle baths. Very glamorous.")],
    [(0, "Did you see the match on {wd}?"), (1, "Missed it, was it good?"), (0, "Painful. Don't ask.")],
    [(0, "I tried a digital detox back in {month}. Lasted about a day and a half."), (1, "Haha, that's longer than I'd manage.")],
    [(0, "What are you up to this weekend?"), (1, "Nothing, and I'm so excited about it."), (0, "Honestly the dream.")],
    [(0, "Random question: tea or coffee?"), (1, "Coffee in the morning, tea after lunch. Why?"), (0, "Settling an argument at work.")],
    [(0, "I need a new phone, mine dies at forty percent."), (1, "Mine does that too. Very annoying.")],
    [(0, "Sorry I went quiet, work has been mental."), (1, "No worries at all!")],
    [(0, "The clocks change soon, right?"), (1, "I think so. I never know which way."), (0, "Same, every single time.")],
    [(0, "Made soup for the week on {wd}. Already sick of it."), (1, "What kind?"), (0, "Lentil. Always lentil.")],
    [(0, "I found a tenner in an old coat pocket today."), (1, "Best feeling ever.")],
    [(0, "My mum called for an hour last night to tell me about her neighbour's hedge."), (1, "Haha, and?"), (0, "It's too tall. That was the whole story.")],
    [(0, "Do you ever just forget what day it is?"), (1, "Constantly. It's {today}, by the way."), (0, "Thank you, I genuinely needed that.")],
    [(0, "Got my hair cut on {wd}. Slightly too short."), (1, "It'll grow!"), (0, "That's what everyone says.")],
    [(0, "Are you going to that thing on the {nth}?"), (1, "What thing?"), (0, "Never mind, wrong chat, sorry!")],
    [(0, "Internet was down all {wd} evening."), (1, "What did you do?"), (0, "Read a book like it's 1850.")],
    [(0, "Any plans for {month}?"), (1, "Not yet, probably just work. You?"), (0, "Same. Maybe a long weekend somewhere if I'm lucky.")],
    [(0, "I swear this week has been a month long."), (1, "Same here. Busy busy.")],
    [(0, "I finally cleaned out the fridge."), (1, "Brave. What did you find?"), (0, "Something that used to be a cucumber.")],
    [(0, "Did you end up going out on {wd}?"), (1, "Nah, stayed in. Pizza and bed."), (0, "Elite choice.")],
    [(0, "My neighbour's birthday party went on till 2am on {wd}."), (1, "Were you at least invited?"), (0, "I was. I went to bed at ten.")],
    [(0, "Back in {month} I said I'd learn to cook properly. Still living on toast."), (1, "Toast is cooking."), (0, "Thank you.")],
    ["pm", (0, "Long day. I just want my sofa."), (1, "Go! Sofa time.")],
    ["pm", (0, "What did you have for dinner?"), (1, "Leftover pasta. You?"), (0, "Cereal. Don't judge.")],
    ["noon", (0, "What are you having for lunch?"), (1, "Sad desk salad. You?"), (0, "Crisps. Technically a potato.")],
    [(0, "Haha, I just laughed out loud on the train at something you sent last week."), (1, "Ha! Which one?"), (0, "The goose video.")],
    [(0, "Is it just me or is everyone ill at the moment?"), (1, "Everyone. Half my building is coughing.")],
    [(0, "I've been meaning to ask, did you ever fix your laptop?"), (1, "Sort of. It only crashes on {wd}s now."), (0, "Ha, very specific.")],
    [(0, "Payday is on the {nth} and I'm counting the hours."), (1, "Same. Beans on toast until then.")],
]
PHOTOS = [
    ["pm", (0, "Look at the sky tonight.", "a photo of a pink sunset over rooftops"), (1, "Wow, gorgeous."), (0, "Took it from the kitchen window.")],
    ["noon", (0, "My lunch. Be jealous.", "a photo of a bowl of noodles with a fried egg"), (1, "I am, actually.")],
    ["am", (0, "Breakfast of champions.", "a photo of toast with a smiley face drawn in ketchup"), (1, "Ha! Art.")],
    [(0, "Guess where I am.", "a photo of a library reading room with green lamps"), (1, "Ooh, fancy. Studying?"), (0, "Hiding from my to-do list.")],
    [(0, "New mug. Thoughts?", "a photo of a mug shaped like a cactus"), (1, "Terrible. I love it.")],
    [(0, "Found this in a charity shop.", "a photo of a ceramic frog wearing a tiny hat"), (1, "You HAD to buy that."), (0, "I did.")],
    [(0, "The view from my desk today.", "a photo of rain on a window over a car park"), (1, "Grim. Very grim.")],
    [(0, "This is my desk right now.", "a photo of a messy desk with three coffee mugs"), (1, "Three mugs. Impressive.")],
    [(0, "Look what someone left on my doorstep.", "a photo of a bag of lemons on a doorstep"), (1, "Best neighbour ever.")],
    [(0, "Spotted on my walk.", "a photo of a fox sitting on a garden wall"), (1, "Aww, hello fox.")],
    [(0, "The queue at the post office.", "a photo of a long queue snaking out of a shop door"), (1, "Oh no. Good luck.")],
    [(0, "This cloud looks exactly like a rabbit.", "a photo of a rabbit-shaped cloud over a roof"), (1, "It really does!")],
    [(0, "Someone parked like this outside my building.", "a photo of a car parked across two spaces"), (1, "Criminal."), (0, "I know.")],
    [(0, "The office plant is thriving, unlike me.", "a photo of a huge leafy plant on a filing cabinet"), (1, "Ha, it's taller than you.")],
    ["pm", (0, "Tonight's dinner. I'm weirdly proud.", "a photo of a pan of fried rice with peas"), (1, "Looks great, save me some.")],
    [(0, "Found my old school report in a drawer.", "a photo of a yellowed school report"), (1, "What does it say?"), (0, "Talks too much. Nothing has changed.")],
]


def personal_small(ctx, x, y, s_idx, rng):
    """Small talk that mentions the speakers' own people and hobbies."""
    opts = []
    opts.append([(0, "How's the family?"), (1, "All good. %s says hi." % y.sib), (0, "Hi back!")])
    opts.append([(0, "How's work going?"), (1, "Busy, as ever. Lots of meetings about meetings."), (0, "The worst kind.")])
    opts.append([(0, "Did you talk to %s this week?" % y.friend), (1, "Briefly. Same old, same old.")])
    if x.partner:
        opts.append([(0, "%s says hi, by the way." % x.partner), (1, "Hi %s!" % x.partner)])
    if y.kid:
        opts.append([(0, "How's %s?" % y.kid[0]), (1, "Growing like a weed. Eats like one too."), (0, "Ha!")])
    for first, who, lines in ctx.mentions:
        if s_idx >= first and who in (x, y):
            line = rng.choice(lines)
            hob = [HOBBIES[h]["noun"] for h in who.hobbies]
            line = line.replace("{noun}", hob[1]).replace("{Noun}", cap(hob[1]))
            role = 0 if who is x else 1
            opts.append([(role, line), (1 - role, rng.choice(REACT_MENTION))])
    return opts


def tod_ok(ex, hour):
    tag = ex[0] if isinstance(ex[0], str) else "any"
    return (tag == "any" or (tag == "am" and hour < 12) or (tag == "pm" and hour >= 17)
            or (tag == "noon" and 11 <= hour <= 14))


def choose(options, hour, used, rng, here=None):
    """An exchange fitting the time of day, never repeated within a session
    (`here`) and preferably not used yet in the conversation (`used`)."""
    fit = [ex for ex in options if tod_ok(ex, hour) and (here is None or id(ex) not in here)]
    if not fit:
        return None
    fresh = [ex for ex in fit if id(ex) not in used]
    ex = rng.choice(fresh or fit)
    used.add(id(ex))
    if here is not None:
        here.add(id(ex))
    return ex


def fill(ex, x, y, d, rng):
    wd, wd2 = rng.sample([w for w in WEEKDAYS if w != WEEKDAYS[d.weekday()]], 2)
    slots = dict(X=x.name, Y=y.name, today=WEEKDAYS[d.weekday()], wd=wd, wd2=wd2,
                 month=rng.choice(MONTHS), nth=ordinal(rng.choice([n for n in range(2, 29) if n != d.day])))
    out = []
    for item in ex:
        if isinstance(item, str):
            continue
        role, text = item[0], item[1]
        who = x if role == 0 else y
        out.append(Turn(who.name, text.format(**slots), item[2] if len(item) > 2 else None))
    return out


# --------------------------------------------------------------------------
# Building one conversation

def make_arcs(ctx):
    rng = ctx.rng
    a, b = ctx.people
    other = {a.name: b, b.name: a}
    arcs = []
    for p in (a, b):
        o = other[p.name]
        arcs.append(HobbyArc(ctx, p, o, p.hobbies[0], False))
        arcs.append(HobbyArc(ctx, p, o, p.hobbies[1], True))
        if rng.random() < 0.75:
            arcs.append(SiblingArc(ctx, p, o))
        if p.kid and rng.random() < 0.85:
            arcs.append(KidsArc(ctx, p, o))
    mover = rng.choice([a, b])
    arcs.append(MoveArc(ctx, mover, other[mover.name]))
    jobber = other[mover.name] if rng.random() < 0.7 else mover
    arcs.append(JobArc(ctx, jobber, other[jobber.name]))
    petter = rng.choice([a, b])
    arcs.append(PetArc(ctx, petter, other[petter.name]))
    homes = (HOME_COUNTRY[a.city], HOME_COUNTRY[b.city])
    dests = [d for d in DESTS if d["country"] not in homes]
    for dest in rng.sample(dests, 2):
        p = rng.choice([a, b])
        arcs.append(TripArc(ctx, p, other[p.name], dest))
    if rng.random() < 0.75:
        p = rng.choice([a, b])
        arcs.append(IllnessArc(ctx, p, other[p.name]))
    if rng.random() < 0.65:
        p = rng.choice([a, b])
        arcs.append(WeddingArc(ctx, p, other[p.name]))
    for p, plan in zip(rng.sample((a, b), rng.choice((1, 2, 2))), rng.sample(PLANS, 2)):
        arcs.append(PlanArc(ctx, p, other[p.name], plan))
    books = rng.sample(BOOKS, 2)
    for p, book in zip((a, b), books):
        if rng.random() < 0.65:
            arcs.append(BookArc(ctx, p, other[p.name], book))
    veg = None
    if rng.random() < 0.5:
        veg = rng.choice([a, b])
        arcs.append(DietArc(ctx, veg, other[veg.name]))
    eaters = [x for x in (a, b) if x is not veg]
    for p, cu in zip(rng.sample(eaters, rng.randint(1, len(eaters))), rng.sample(CUISINES, 2)):
        arcs.append(RestaurantArc(ctx, p, other[p.name], cu))
    for p, cw in zip((a, b), rng.sample(COWORKERS, 2)):
        if rng.random() < 0.55:
            arcs.append(CoworkerArc(ctx, p, other[p.name], cw))
    return arcs


TOPICAL_SHARE = (0.6, 0.72)    # share of sessions that dwell on a few subjects


def schedule(arcs, n, rng, dates, caps):
    """Spread every arc's steps over distinct sessions in time order, at most
    caps[i] steps in session i."""
    for _ in range(100):
        for arc in arcs:
            arc.sched = None
        load = [0] * n
        for arc in sorted(arcs, key=lambda a: -len(a.steps)):
            k = len(arc.steps)
            for _ in range(1000):
                idx = sorted(rng.sample(range(n), k))
                if all(load[i] < caps[i] for i in idx) and arc.ok(idx, n, dates):
                    break
            else:
                break
            for i in idx:
                load[i] += 1
            arc.sched = idx
        else:
            return
    raise RuntimeError("cannot schedule the arcs")


class Subject:
    """Consecutive turns of a topical session about one arc: a list of
    [kind, turns] parts, kind being lead, core, follow or generic."""

    def __init__(self, arc, parts, anchors):
        self.arc, self.parts, self.anchors = arc, parts, anchors

    @property
    def turns(self):
        return [t for _, ts in self.parts for t in ts]

    def trim(self):
        """Drop one generic or talk exchange if 5 turns and some talk remain."""
        size = len(self.turns)
        talk = [i for i, (k, _) in enumerate(self.parts) if k in ("lead", "follow")]
        for kind in ("generic", "follow", "lead"):
            for i, (k, ts) in enumerate(self.parts):
                if k == kind and size - len(ts) >= 5 and (k == "generic" or len(talk) > 1):
                    del self.parts[i]
                    return True
        return False


def talk_key(ex):
    return next(item[1] for item in ex if not isinstance(item, str))


def make_subject(ctx, arc, s, core, step, rng):
    """An exchange of 5-12 turns in session s: talk on the arc's subject
    before and after the step's turns (`core`), or talk alone if core is empty."""
    taken = set()
    keys = [key for key, _ in arc.anchors(step, s)] if core else []

    def names(ex, which):
        text = " ".join(arc.f(item[1]) for item in ex if not isinstance(item, str))
        return any(key in text for key in which)

    def pick(pool):
        pool = [ex for ex in pool if talk_key(ex) not in taken]
        if not pool:
            return None
        fresh = [ex for ex in pool if (id(arc), talk_key(ex)) not in ctx.talked]
        pool = fresh or pool
        missing = [key for key in keys if not any(key in t.text for _, ts in parts for t in ts)]
        if missing:
            pool = [ex for ex in pool if names(ex, missing)] or pool
        ex = rng.choice(pool)
        taken.add(talk_key(ex))
        ctx.talked.add((id(arc), talk_key(ex)))
        return arc.turns_of(ex)

    def generic():
        ex = rng.choice([ex for ex in GENERIC_TALK if talk_key(ex) not in taken])
        taken.add(talk_key(ex))
        return arc.turns_of(ex)

    parts = []
    if core:
        r = rng.random()
        for _ in range(1 if r < 0.4 else 2 if r < 0.46 else 0):
            t = pick(arc.talk(s - 0.5))
            if t:
                parts.append(["lead", t])
        parts.append(["core", core])
        for _ in range(1 if rng.random() < 0.92 else 2):
            t = pick(arc.talk(s))
            if t:
                parts.append(["follow", t])
        if rng.random() < 0.2:
            at = [i for i, part in enumerate(parts) if part[0] == "core"][0] + 1
            parts.insert(rng.choice([at, len(parts)]), ["generic", generic()])
    else:
        for _ in range(rng.choice([2, 2, 3])):
            t = pick(arc.talk(s))
            if t:
                parts.append(["follow", t])
        if rng.random() < 0.4:
            parts.append(["generic", generic()])
    size = lambda: sum(len(turns) for _, turns in parts)
    while size() > 12:
        for kind in ("generic", "follow", "lead"):
            idx = [i for i, part in enumerate(parts) if part[0] == kind]
            if idx:
                del parts[idx[0] if kind == "lead" else idx[-1]]
                break
        else:
            break
    while size() < 5:
        t = pick(arc.talk(s))
        parts.append(["follow", t] if t else ["generic", generic()])
    return Subject(arc, parts, arc.anchors(step, s) if core else [])


def with_tail(question, tail, after=()):
    """The question with `tail` added at the end, or after one of the words
    in `after` (None if there is none)."""
    body = question[:-1]
    if not after:
        return body + " " + tail + "?"
    ws = body.split(" ")
    for i, w in enumerate(ws):
        if w in after:
            return " ".join(ws[:i + 1] + [tail] + ws[i + 1:]) + "?"
    return None


def repeats(text):
    """Whether a content word occurs twice ("music lessons in X's lessons")."""
    ws = [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP]
    return len(ws) != len(set(ws))


def tail(text, after=()):
    return lambda question: with_tail(question, text, after)


def anchor_questions(ctx, subjects, rng):
    """Name the subject in some questions whose evidence sits inside one
    exchange, with a name that occurs in the turns around the evidence but in
    none of the evidence turns (nor in the question or answer already)."""
    where = {}
    for sb in subjects:
        for t in sb.turns:
            where[id(t)] = sb
    for q in ctx.questions:
        if q["category"] not in ("single-hop", "temporal"):
            continue
        sb = where.get(id(q["ev"][0]))
        if sb is None or not sb.anchors or any(where.get(id(t)) is not sb for t in q["ev"]):
            continue
        text = q["question"]
        if ("," in text or text.endswith(" in?")
                or re.search(r"\b(or|that|that's|so|instead|while|whose|because|than)\b", text)):
            continue
        evw = set().union(*(words(t.text) for t in q["ev"]))
        near = " ".join(t.text for t in sb.turns if not any(t is e for e in q["ev"])).lower()
        opts = []
        for key, edit in sb.anchors:
            kw = words(key)
            if (not kw or kw & evw or kw & words(text) or kw & words(q["answer"])
                    or key.lower() not in near):
                continue
            new = edit(text)
            if new and not repeats(new):
                opts.append(new)
        if opts:
            q["question"] = rng.choice(opts)


def small_exchange(ctx, se, s, day, rng, used):
    """One piece of small talk for session s (openers and closers aside)."""
    for _ in range(20):
        x, y = (se["x"], se["y"]) if rng.random() < 0.5 else (se["y"], se["x"])
        r = rng.random()
        if r < 0.5:
            ex = choose(PHOTOS, se["hour"], used, rng, se["used"])
        elif r < 0.7:
            opts = [ex for ex in personal_small(ctx, x, y, s, rng) if ex[0][1] not in se["used"]]
            if not opts:
                continue
            ex = rng.choice(opts)
            se["used"].add(ex[0][1])
        else:
            ex = choose(SMALL, se["hour"], used, rng, se["used"])
        if ex is not None:
            return fill(ex, x, y, day, rng)
    return []


def build(ci, a, b, rng, start):
    cid = "conv-%02d" % ci
    ctx = Ctx(cid, a, b, rng)
    arcs = make_arcs(ctx)
    total = sum(len(arc.steps) for arc in arcs)
    n = min(18, max(12, round(total / 4) + rng.randint(-1, 1)))
    dates = [start]
    for _ in range(n - 1):
        dates.append(dates[-1] + timedelta(days=rng.choice([3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 19, 23])))

    # Topical sessions take 2-4 arc steps, each the middle of its own
    # exchange; the other sessions take the rest (usually at most 8 each),
    # interleaved with small talk.
    topical = [False] * n
    for i in rng.sample(range(n), round(n * rng.uniform(*TOPICAL_SHARE))):
        topical[i] = True
    caps = [rng.choice((2, 3, 3, 4)) if t else 0 for t in topical]
    need = lambda: -(-(total * 23 // 20 - sum(caps)) // topical.count(False))
    while need() > 8 and any(0 < c < 4 for c in caps):
        caps[rng.choice([i for i, c in enumerate(caps) if 0 < c < 4])] += 1
    rest = max(5, need())
    caps = [c or rest for c in caps]
    schedule(arcs, n, rng, dates, caps)
    for arc in arcs:
        arc.prepare(arc.sched, [dates[i] for i in arc.sched])
    episodes = [[] for _ in range(n)]
    for s in range(n):
        todo = [(arc, k) for arc in arcs for k, i in enumerate(arc.sched) if i == s]
        rng.shuffle(todo)
        for arc, k in todo:
            arc.topical = topical[s]
            episodes[s].append((arc, k, arc.render(k, dates[s])))
            arc.topical = False
    for arc in arcs:
        arc.finish()
    cross_questions(ctx)

    used = set()
    subjects = []
    sessions = []
    for s in range(n):
        x, y = (a, b) if rng.random() < 0.5 else (b, a)
        hour = rng.randint(7, 19)
        se = dict(x=x, y=y, hour=hour, used=set(), topical=topical[s])
        se["open"] = fill(choose(OPENERS, hour, used, rng), x, y, dates[s], rng)
        se["close"] = fill(choose(CLOSERS, hour, used, rng), x, y, dates[s], rng)
        if topical[s]:
            blocks = [make_subject(ctx, arc, s, ep, arc.steps[k], rng) for arc, k, ep in episodes[s]]
            here = set(id(arc) for arc, _, _ in episodes[s])
            idle = [arc for arc in arcs if id(arc) not in here and arc.idle_ok(s) and len(arc.talk(s)) >= 2]
            want = max(0, 2 - len(blocks))
            if not want and len(blocks) < 4 and rng.random() < 0.2:
                want = 1
            for arc in rng.sample(idle, min(want, len(idle))):
                blocks.insert(rng.randrange(len(blocks) + 1), make_subject(ctx, arc, s, [], None, rng))
            subjects += blocks
            pieces = []
            if rng.random() < 0.25:
                pieces.append(small_exchange(ctx, se, s, dates[s], rng, used))
            for i, sb in enumerate(blocks):
                if i and rng.random() < 0.12:
                    pieces.append(small_exchange(ctx, se, s, dates[s], rng, used))
                pieces.append(sb)
            if rng.random() < 0.25:
                pieces.append(small_exchange(ctx, se, s, dates[s], rng, used))
            se["blocks"] = pieces
        else:
            se["blocks"] = [ep for _, _, ep in episodes[s]] + [small_exchange(ctx, se, s, dates[s], rng, used)]
        sessions.append(se)

    # Keep the conversation within its size: drop small talk between
    # subjects, then exchanges inside subjects; then add small talk to the
    # interleaved sessions up to a target number of turns.
    turns_of = lambda bl: bl.turns if isinstance(bl, Subject) else bl
    size = lambda se: len(se["open"]) + len(se["close"]) + sum(len(turns_of(bl)) for bl in se["blocks"])
    limit = rng.randint(400, 430)
    for s in rng.sample(range(n), n):
        se = sessions[s]
        if sum(size(x) for x in sessions) <= limit:
            break
        if se["topical"]:
            se["blocks"] = [bl for bl in se["blocks"] if isinstance(bl, Subject)]
    for sb in rng.sample(subjects, len(subjects)):
        if sum(size(x) for x in sessions) <= limit:
            break
        sb.trim()
    mixed = [s for s in range(n) if not topical[s]]
    target = rng.randint(310, 370)
    while mixed and sum(size(se) for se in sessions) < target:
        if rng.random() < 0.5:
            s = min(mixed, key=lambda i: (size(sessions[i]), i))
        else:
            s = rng.choice(mixed)
        ex = small_exchange(ctx, sessions[s], s, dates[s], rng, used)
        if not ex:
            mixed.remove(s)
            continue
        sessions[s]["blocks"].append(ex)

    out_sessions = []
    for s, se in enumerate(sessions):
        blocks = se["blocks"]
        if not se["topical"]:
            rng.shuffle(blocks)
        turns = se["open"] + [t for bl in blocks for t in turns_of(bl)] + se["close"]
        sid = "s%02d" % (s + 1)
        t = datetime(dates[s].year, dates[s].month, dates[s].day, se["hour"], rng.randint(0, 59),
                     rng.randint(0, 59))
        started = t
        js = []
        for j, turn in enumerate(turns, 1):
            if j > 1:
                t = t + timedelta(seconds=rng.randint(10, 240))
            turn.ref = "%s:%s:%d" % (cid, sid, j)
            obj = {"speaker": turn.speaker, "text": turn.text, "at": t.strftime("%Y-%m-%dT%H:%M:%SZ"),
                   "ref": turn.ref}
            if turn.attach:
                obj["attachments"] = [{"caption": turn.attach}]
            js.append(obj)
        assert t.date() == dates[s], "session crosses midnight"
        out_sessions.append({"session_id": sid, "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"), "turns": js})
    assert all(5 <= len(sb.turns) <= 12 for sb in subjects)
    anchor_questions(ctx, subjects, rng)
    conv = {"conversation_id": cid, "speakers": [a.name, b.name], "sessions": out_sessions}
    single = [q for q in ctx.questions if q["category"] == "single-hop"]
    if len(single) > MAX_SINGLE_HOP:
        keep = set(id(q) for q in rng.sample(single, MAX_SINGLE_HOP))
        ctx.questions = [q for q in ctx.questions if q["category"] != "single-hop" or id(q) in keep]
    qs = []
    seen = set()
    for q in ctx.questions:
        assert all(t.ref for t in q["ev"]), q["question"]
        if q["question"] in seen:
            continue
        seen.add(q["question"])
        qs.append({"conversation_id": cid, "question": q["question"], "category": q["category"],
                   "evidence": [t.ref for t in q["ev"]], "answer": q["answer"]})
    return conv, qs, sum(topical)


# --------------------------------------------------------------------------
# Validation and output

def parse_at(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ")


def validate(convs, questions):
    refs = {}
    names = set()
    for c in convs:
        assert len(c["speakers"]) == 2
        for n in c["speakers"]:
            assert n not in names, "speaker name reused: " + n
            names.add(n)
        assert 12 <= len(c["sessions"]) <= 25, c["conversation_id"]
        nturns = sum(len(s["turns"]) for s in c["sessions"])
        assert 250 <= nturns <= 450, (c["conversation_id"], nturns)
        prev_end = None
        for s in c["sessions"]:
            start = parse_at(s["started_at"])
            assert prev_end is None or start > prev_end + timedelta(days=1), s["session_id"]
            assert s["turns"][0]["at"] == s["started_at"]
            last = None
            for t in s["turns"]:
                assert t["speaker"] in c["speakers"]
                at = parse_at(t["at"])
                if last is not None:
                    gap = (at - last).total_seconds()
                    assert 10 <= gap <= 240, (t["ref"], gap)
                last = at
                assert t["ref"] not in refs, t["ref"]
                assert t["ref"] == "%s:%s:%s" % (c["conversation_id"], s["session_id"], t["ref"].split(":")[-1])
                refs[t["ref"]] = c["conversation_id"]
            prev_end = last
    assert len(convs) >= 10 and len(refs) >= 2500
    per_cat = {k: 0 for k in CATEGORIES}
    per_conv = {}
    seen = set()
    for q in questions:
        assert q["category"] in CATEGORIES
        assert 1 <= len(q["evidence"]) <= 4
        assert len(set(q["evidence"])) == len(q["evidence"])
        for r in q["evidence"]:
            assert refs.get(r) == q["conversation_id"], r
        key = (q["conversation_id"], q["question"])
        assert key not in seen, key
        seen.add(key)
        assert "{" not in q["question"] + q["answer"], q
        per_cat[q["category"]] += 1
        per_conv.setdefault(q["conversation_id"], {k: 0 for k in CATEGORIES})[q["category"]] += 1
    assert len(questions) >= 400
    assert all(v >= 60 for v in per_cat.values()), per_cat
    assert len(per_conv) == len(convs)
    for cid, cats in per_conv.items():
        assert all(v >= 3 for v in cats.values()), (cid, cats)
    for c in convs:
        for s in c["sessions"]:
            for t in s["turns"]:
                assert "{" not in t["text"] and "}" not in t["text"], t
    return per_cat, per_conv, len(refs)


def main():
    rng = random.Random(SEED)
    convs, questions = [], []
    ntopical = 0
    start = date(2024, 1, 8)
    for i, (a, b) in enumerate(PAIRS, 1):
        crng = random.Random(rng.randrange(1 << 30))
        conv_start = start + timedelta(days=crng.randint(0, 400))
        conv, qs, nt = build(i, a, b, crng, conv_start)
        ntopical += nt
        convs.append(conv)
        questions += qs
    per_cat, per_conv, nturns = validate(convs, questions)
    with open(os.path.join(HERE, "conversations.jsonl"), "w", encoding="utf-8") as f:
        for c in convs:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    with open(os.path.join(HERE, "questions.jsonl"), "w", encoding="utf-8") as f:
        for q in questions:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    nsess = sum(len(c["sessions"]) for c in convs)
    natt = sum(1 for c in convs for s in c["sessions"] for t in s["turns"] if "attachments" in t)
    print("conversations: %d, sessions: %d (%d topical), turns: %d (attachments on %d)" % (
        len(convs), nsess, ntopical, nturns, natt))
    print("questions: %d  %s" % (len(questions), "  ".join("%s=%d" % kv for kv in per_cat.items())))
    for c in convs:
        cid = c["conversation_id"]
        print("  %s %-18s sessions=%2d turns=%3d  %s" % (
            cid, "/".join(c["speakers"]), len(c["sessions"]), sum(len(s["turns"]) for s in c["sessions"]),
            " ".join("%s=%d" % kv for kv in per_conv[cid].items())))


if __name__ == "__main__":
    main()
