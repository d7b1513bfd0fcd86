import sys
open('/work/wt/i28-programs/.ptmp/a/popen-gw1/test_a_command_gets_each_chose1/seen.jsonl', 'a').write(sys.stdin.read() + '\n')
