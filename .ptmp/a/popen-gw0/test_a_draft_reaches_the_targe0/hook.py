import sys
open('/work/wt/i28-programs/.ptmp/a/popen-gw0/test_a_draft_reaches_the_targe0/seen.jsonl', 'a').write(sys.stdin.read() + '\n')
