# bulkwatch: a message moved into Junk is reported as spam by its user
# (Dovecot IMAPSieve, docs/admin/zero-hour.md). The pipe program
# bulkwatch-report lies in sieve_pipe_bin_dir.
require ["vnd.dovecot.pipe", "copy", "imapsieve", "environment", "variables"];

if environment :matches "imap.user" "*" {
  set "username" "${1}";
}

pipe :copy "bulkwatch-report" ["spam", "${username}"];
