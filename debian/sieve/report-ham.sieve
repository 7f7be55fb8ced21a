# bulkwatch: a message moved out of Junk (not to the Trash) is reported as
# not spam by its user (Dovecot IMAPSieve, docs/admin/zero-hour.md).
require ["vnd.dovecot.pipe", "copy", "imapsieve", "environment", "variables"];

if environment :matches "imap.mailbox" "*" {
  set "mailbox" "${1}";
}

if string :is "${mailbox}" ["Trash", "Deleted Messages", "Deleted Items"] {
  stop;
}

if environment :matches "imap.user" "*" {
  set "username" "${1}";
}

pipe :copy "bulkwatch-report" ["ham", "${username}"];
