"""What rounds AH and AI met on first contact (issue 26): string concatenation in Lua, Julia and MATLAB, regular
expressions that match paths, work folders kept in a temporary root, pathlib's operator after a string, a TeX log's
wrapped lines, a bibliography, a sequencing file's header, placeholders in help texts, macOS's shared folder, and a
comment that draws a path from the code's own variables. Fixtures of our own, written as the rule reads."""

from __future__ import annotations

from tests.paths_support import build_tree, found_in


def test_a_string_joined_to_a_folder_in_lua_julia_or_matlab_is_a_piece_and_one_that_starts_the_join_is_a_path(tmp_path):
    files = {
        "opts.lua": "local rgb = pathDatabase..'/RGB/'\nlocal data = '/data/ana/set'\n",
        "load.jl": 'frames = root * "/RGB/"\nsaved = "/data/ana/out"\n',
        "paths.m": "a = [base '/RGB/'];\nb = strcat(base, '/flow/');\nc = fullfile(base, '/x/');\nd = ['/data/ana/set' name];\n",
    }
    root = build_tree(tmp_path / "p", files)
    assert sorted((file, line) for file, line, _, _ in found_in(root)) == [("load.jl", 2), ("opts.lua", 2), ("paths.m", 4)]


def test_a_regular_expression_that_matches_paths_is_no_folder_and_a_glob_stays_one(tmp_path):
    matlab = (
        "pattern = 'D:\\\\Imaging\\\\([^\\\\]+)\\\\([^\\\\]+)';\n"
        "tokens = regexp(p, 'D:\\\\Imaging\\\\(\\\\w+)', 'tokens');\n"
        "base_path = 'D:\\Imaging';\n"
    )
    python = 'user = re.match(r"^/home/(\\w+)/", p)\nrun = re.compile("/data/(?:ana|bo)/runs")\nfiles = glob("/data/ana/*.*")\n'
    root = build_tree(tmp_path / "p", {"organize.m": matlab, "find.py": python})
    assert sorted((file, line) for file, line, _, _ in found_in(root)) == [("find.py", 3), ("organize.m", 3)]


def test_a_work_folder_kept_in_a_temporary_root_holds_results_and_a_scratch_one_does_not(tmp_path):
    python = (
        "ray_workdir = '/tmp'\n"
        "RAY_WORKDIR = os.path.join('/dev/shm', 'ray_workdir', NAME)\n"
        "engine = Engine(ray_workdir='/dev/shm/ray-workdir')\n"
        "tmp_dir = '/tmp'\n"
        "cache_dir = '/tmp'\n"
        "print('saved logs to /tmp')\n"
    )
    yaml = "ray_workdir: /dev/shm/${study_name}\nparent_path: '/dev/shm/ray_workdir'\nscratch: /dev/shm\n"
    root = build_tree(tmp_path / "p", {"config.py": python, "conf/target.yaml": yaml})
    found = sorted((file, line, shape) for file, line, shape, _ in found_in(root))
    assert found == [
        ("conf/target.yaml", 1, "temp-dir"),
        ("conf/target.yaml", 2, "temp-dir"),
        ("config.py", 1, "temp-dir"),
        ("config.py", 2, "temp-dir"),
        ("config.py", 3, "temp-dir"),
    ]


def test_pathlibs_operator_after_a_string_is_no_path_and_a_string_after_a_quote_in_prose_is_one(tmp_path):
    python = (
        "data = home/'rlp'/project_name/'data'\nlabels = Path(\"x\")/project_name/'labels'\nnote = \"it's here\"; root = '/data/ana/set'\n"
    )
    root = build_tree(tmp_path / "p", {"setup.py": python})
    assert [line for _, line, _, _ in found_in(root)] == [3]


def test_a_tex_logs_wrapped_system_path_is_the_systems_and_a_bibliography_is_documentation(tmp_path):
    head = "This is pdfTeX, Version 3.14159265-2.6-1.40.18 (TeX Live 2017/Debian)\n"
    first = "hvb8a.pfb></usr/share/texlive/texmf-dist/fonts/type1/urw/times/utmb8a.pfb></usr"
    second = "/share/texlive/texmf-dist/fonts/type1/urw/times/utmbi8a.pfb></usr/share/texlive"
    third = "/texmf-dist/fonts/type1/urw/times/utmr8a.pfb>"
    assert len(first) == len(second) == 79
    user = "x" * 60 + " /home/ana/paper/figs"  # a user's own folder in the log stays one
    log = head + "\n".join([first, second, third, user]) + "\n"
    bib = "@article{a,\n  title = {A},\n  file = {A.pdf:/home/ana/Zotero/storage/A.pdf:application/pdf}\n}\n"
    root = build_tree(tmp_path / "p", {"paper/main.log": log, "paper/refs.bib": bib})
    found = sorted((file, line, category) for file, line, _, category in found_in(root))
    assert found == [("paper/main.log", 5, "code"), ("paper/refs.bib", 3, "docs")]


def test_a_sequencing_files_header_records_the_run_that_made_it_on_another_machine(tmp_path):
    vcf = (
        "##fileformat=VCFv4.1\n##reference=/vol3/home/ana/refgenomes/hg19.fa\n"
        '##commandline="freebayes --fasta-reference /vol3/home/ana/refgenomes/hg19.fa /vol3/home/ana/x.bam"\n'
        "#CHROM\tPOS\tID\n"
    )
    sam = "@HD\tVN:1.6\n@PG\tID:bwa\tCL:bwa mem /home/ana/ref.fa /home/ana/r1.fq\n"
    root = build_tree(tmp_path / "p", {"calls.vcf": vcf, "aln.sam": sam, "run.sh": "ref=/vol3/home/ana/refgenomes/hg19.fa\n"})
    found = {(file, line, category) for file, line, _, category in found_in(root)}
    assert found == {("aln.sam", 2, "remote"), ("calls.vcf", 2, "remote"), ("calls.vcf", 3, "remote"), ("run.sh", 1, "code")}


def test_a_placeholder_in_a_help_text_or_a_prompt_is_a_path_and_a_folder_named_in_a_shell_assignment_too(tmp_path):
    python = (
        "p.add_argument('--indir', help='Input directory containing the vcf files: /dir')\n"
        "p.add_argument('--infile', help='The input vcf file, Ex: /file.vcf')\n"
        "p.add_argument('--mode', help='one of /train or /eval')\n"
        "out = raw_input('Output Location (/dir): ')\n"
    )
    shell = "VCFDIR=/dir\nDATA_DIR=/data\nMODE=/fast\n"
    root = build_tree(tmp_path / "p", {"cli.py": python, "run.sh": shell})
    found = sorted((file, line) for file, line, _, _ in found_in(root))
    assert found == [("cli.py", 1), ("cli.py", 2), ("cli.py", 4), ("run.sh", 1), ("run.sh", 2)]


def test_macos_shared_folder_is_the_systems_and_what_is_kept_in_it_is_one_macs(tmp_path):
    python = "local = Path('/Users/Shared').exists()\ndata = '/Users/Shared/lab/data'\nmine = '/Users/ana/data'\n"
    root = build_tree(tmp_path / "p", {"setup_env.py": python})
    assert [(line, shape) for _, line, shape, _ in found_in(root)] == [(2, "absolute"), (3, "home")]


def test_a_comment_that_draws_a_path_from_the_codes_own_variables_names_no_folder(tmp_path):
    python = (
        "for idx in range(n):\n"
        "    idx_sample = params['idx_sample'][idx]\n"
        "    idx_sub = params['idx_sub'][idx]\n"
        "    # build the group /idx_sample/idx_sub/params\n"
        "    group = h5.create_group(f'/{idx_sample}/{idx_sub}')\n"
        "    # the raw files are in /data/ana/raw\n"
    )
    root = build_tree(tmp_path / "p", {"tools.py": python})
    assert [line for _, line, _, _ in found_in(root)] == [6]


def test_a_text_file_the_code_writes_or_reads_is_the_codes_and_prose_beside_it_stays_documentation(tmp_path):
    script = "out = outdir + '/' + 'repeatability.txt'\nwith open(out, 'w') as f:\n    f.write(report)\n"
    written = "Counting the variants of sample /media/ana/Extra/run1/total.vcf\nLow Freq Var Present:\n2290\n"
    notes = "Notes\n\nThe raw runs were in /media/ana/Extra/run1 on the lab box.\n"
    files = {"overlap/count.py": script, "overlap/repeatability.txt": written, "overlap/notes.txt": notes, "README.txt": notes}
    root = build_tree(tmp_path / "p", files)
    found = sorted((file, category) for file, _, _, category in found_in(root))
    assert found == [("README.txt", "docs"), ("overlap/notes.txt", "docs"), ("overlap/repeatability.txt", "code")]
