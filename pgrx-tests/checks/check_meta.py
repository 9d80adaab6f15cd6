#!/usr/bin/env python3
"""Validates META.json, the PGXN distribution metadata, against the PGXN Meta Spec v1.0.0
(https://pgxn.org/spec/: the required keys and the form of each value this file uses) and
against the project: its versions must match Cargo.toml's, the control file's default_version and
the library's pg_module_magic!, the files it names must exist, and the oldest PostgreSQL it
requires must be the oldest one the tests cover (pgrx-tests/harness/lib.sh's SUPPORTED_PG_MAJORS).

Usage: python3 pgrx-tests/checks/check_meta.py [--meta FILE] [--cargo-toml FILE] [PROJECT_DIR]
Prints "META.json: ok", or each problem found and exits with status 1.
"""
import argparse
import json
import pathlib
import re
import sys
import tomllib

# Meta Spec 1.0.0, "Structure": the keys every META.json must have.
REQUIRED = ["name", "abstract", "version", "maintainer", "license", "provides", "meta-spec"]
# Meta Spec 1.0.0, "license": the known license strings.
LICENSES = {
    "agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd", "freebsd", "gfdl_1_2",
    "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1", "lgpl_3_0", "mit", "mozilla_1_0",
    "mozilla_1_1", "openssl", "perl_5", "postgresql", "qpl_1_0", "ssleay", "sun", "zlib",
    "open_source", "restricted", "unrestricted", "unknown",
}
RELEASE_STATUS = {"stable", "testing", "unstable"}
PHASES = {"configure", "build", "test", "runtime", "develop"}
RELATIONS = {"requires", "recommends", "suggests", "conflicts"}
# Semantic Versioning 1.0.0, which the Meta Spec requires for every version.
SEMVER = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)([a-zA-Z][0-9a-zA-Z-]*)?$")
# A prereq's version range: "0", a version, or comparisons joined by commas.
RANGE_PART = re.compile(r"^\s*(?:(==|!=|>=|<=|>|<)\s*)?(\S+)\s*$")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("project_dir", nargs="?", default=pathlib.Path(__file__).resolve().parents[2])
    ap.add_argument("--meta")
    ap.add_argument("--cargo-toml")
    args = ap.parse_args()
    root = pathlib.Path(args.project_dir)
    meta_path = pathlib.Path(args.meta) if args.meta else root / "META.json"
    cargo_path = pathlib.Path(args.cargo_toml) if args.cargo_toml else root / "Cargo.toml"
    problems = []

    def bad(msg):
        problems.append(msg)

    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError) as e:
        print(f"META.json: cannot be read as JSON: {e}")
        return 1
    if not isinstance(meta, dict):
        print("META.json: not a JSON object")
        return 1

    for key in REQUIRED:
        if key not in meta:
            bad(f'the required key "{key}" is missing')

    def string(key, value=None):
        v = meta.get(key) if value is None else value
        if not isinstance(v, str) or not v.strip():
            bad(f'"{key}" must be a non-empty string')
            return None
        return v

    name = string("name") if "name" in meta else None
    if name and (len(name) < 2 or re.search(r"[\s/\\:]", name)):
        bad(f'"name" {name!r} must have two characters or more and no whitespace, "/", "\\" or ":"')
    if "abstract" in meta:
        string("abstract")
    version = string("version") if "version" in meta else None
    if version and not SEMVER.match(version):
        bad(f'"version" {version!r} is not a semantic version (X.Y.Z)')
    if "maintainer" in meta:
        m = meta["maintainer"]
        if not (isinstance(m, str) and m.strip()
                or isinstance(m, list) and m and all(isinstance(x, str) and x.strip() for x in m)):
            bad('"maintainer" must be a string or a non-empty list of strings')
    if "license" in meta:
        lic = meta["license"]
        names = [lic] if isinstance(lic, str) else lic if isinstance(lic, list) else None
        if isinstance(lic, dict):
            names = []  # {"name": "url"}: any license, named by its URL
        if names is None or (isinstance(lic, list) and not lic):
            bad('"license" must be a string, a list of strings or an object')
        for n in names or []:
            if n not in LICENSES:
                bad(f'"license" {n!r} is not one of the Meta Spec\'s license strings')
        if lic != "postgresql":
            bad(f'"license" is {lic!r}, but Cargo.toml and LICENSE say the PostgreSQL licence ("postgresql")')
    if "release_status" in meta and meta["release_status"] not in RELEASE_STATUS:
        bad(f'"release_status" {meta["release_status"]!r} is not one of {sorted(RELEASE_STATUS)}')
    ms = meta.get("meta-spec")
    if "meta-spec" in meta and (not isinstance(ms, dict) or ms.get("version") != "1.0.0"):
        bad('"meta-spec" must be an object whose "version" is "1.0.0"')

    provides = meta.get("provides")
    if "provides" in meta:
        if not isinstance(provides, dict) or not provides:
            bad('"provides" must be an object naming at least one extension')
            provides = {}
        for ext, p in provides.items():
            if not isinstance(p, dict):
                bad(f'"provides"."{ext}" must be an object')
                continue
            for key in ("file", "version"):
                if key not in p:
                    bad(f'"provides"."{ext}" lacks the required key "{key}"')
            pv = p.get("version")
            if pv is not None and (not isinstance(pv, str) or not SEMVER.match(pv)):
                bad(f'"provides"."{ext}"."version" {pv!r} is not a semantic version (X.Y.Z)')
            for key in ("file", "docfile"):
                f = p.get(key)
                if isinstance(f, str) and not (root / f).is_file():
                    bad(f'"provides"."{ext}"."{key}" names {f}, which is not in the distribution')

    prereqs = meta.get("prereqs", {})
    if not isinstance(prereqs, dict):
        bad('"prereqs" must be an object')
        prereqs = {}
    for phase, rels in prereqs.items():
        if phase not in PHASES:
            bad(f'"prereqs" has an unknown phase {phase!r}')
            continue
        for rel, reqs in (rels or {}).items():
            if rel not in RELATIONS:
                bad(f'"prereqs"."{phase}" has an unknown relation {rel!r}')
                continue
            for req, rng in (reqs or {}).items():
                parts = str(rng).split(",")
                for part in parts:
                    mt = RANGE_PART.match(part)
                    if not mt or not (mt.group(2) == "0" or SEMVER.match(mt.group(2))):
                        bad(f'"prereqs"."{phase}"."{rel}"."{req}" {rng!r} is not a version range')

    # The project's own facts.
    try:
        cargo = tomllib.loads(cargo_path.read_text())["package"]
    except (OSError, ValueError, KeyError) as e:
        bad(f"Cargo.toml cannot be read: {e}")
        cargo = {}
    cv = cargo.get("version")
    if name and cargo.get("name") and name != cargo["name"]:
        bad(f'"name" {name!r} differs from Cargo.toml\'s package name {cargo["name"]!r}')
    if version and cv and version != cv:
        bad(f'"version" {version} differs from Cargo.toml\'s version {cv}')
    if isinstance(provides, dict):
        if name and name not in provides:
            bad(f'"provides" does not name the extension {name!r}')
        for ext, p in provides.items():
            if not (root / f"{ext}.control").is_file():
                bad(f'"provides" names {ext!r}, which has no {ext}.control')
            if isinstance(p, dict) and cv and "version" in p and p["version"] != cv:
                bad(f'"provides"."{ext}"."version" {p.get("version")} differs from Cargo.toml\'s version {cv}')
            if isinstance(p, dict) and "abstract" in p and p["abstract"] != cargo.get("description", p["abstract"]):
                bad(f'"provides"."{ext}"."abstract" differs from Cargo.toml\'s description')
    if "abstract" in meta and cargo.get("description") and meta["abstract"] != cargo["description"]:
        bad('"abstract" differs from Cargo.toml\'s description')
    control = root / f"{name}.control" if name else None
    if control and control.is_file():
        dv = re.search(r"^default_version\s*=\s*'([^']*)'", control.read_text(), re.M)
        if not dv:
            bad(f"{control.name} has no default_version")
        elif dv.group(1) not in ("@CARGO_VERSION@", cv):
            bad(f"{control.name}'s default_version {dv.group(1)} differs from Cargo.toml's version {cv}")
    # The library's magic block names its version too (wherever under src/ it lives).
    magic = [m for f in sorted(root.glob("src/**/*.rs"))
             for m in re.findall(r'pg_module_magic!\([^)]*version\s*=\s*c"([^"]*)"', f.read_text())]
    for mv in magic:
        if cv and mv != cv:
            bad(f"pg_module_magic! says version {mv}, Cargo.toml {cv}")
    # The oldest PostgreSQL required is the oldest the tests cover.
    lib = root / "pgrx-tests" / "harness" / "lib.sh"
    majors = re.search(r'^SUPPORTED_PG_MAJORS="([0-9 ]+)"', lib.read_text(), re.M) if lib.is_file() else None
    if not majors:
        bad(f"{lib.relative_to(root)} sets no SUPPORTED_PG_MAJORS: the oldest tested major is unknown")
    pg_req = (prereqs.get("runtime") or {}).get("requires", {}).get("PostgreSQL") if isinstance(prereqs, dict) else None
    if not pg_req:
        bad('"prereqs"."runtime"."requires" does not name PostgreSQL')
    elif majors:
        oldest = min(int(x) for x in majors.group(1).split())
        if pg_req != f"{oldest}.0.0":
            bad(f'"prereqs"."runtime"."requires"."PostgreSQL" is {pg_req}, but the oldest tested major is {oldest} ({oldest}.0.0)')

    if problems:
        for p in problems:
            print(f"META.json: {p}")
        return 1
    print("META.json: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
