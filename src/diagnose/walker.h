// Finds the log files named by `vigil diagnose`'s inputs, without ever stopping or blocking.
//
// Folders are walked depth-first with one opendir per folder, so a folder that cannot be read
// (too deep a path, removed while walked, I/O error) is named and the walk goes on with the
// others. Symlinks are followed, folders at most once each (by device and inode: a link back to a
// parent is named as a loop, not walked again; a link to / or into /proc, /sys and other kernel
// pseudo filesystems is named, not walked). A folder's entry is a candidate when it looks like
// a log (LooksLikeLog); candidates that cannot be used (dangling or looping symlinks, FIFOs,
// sockets, devices, compressed files we cannot read, entries that cannot be stat'ed) are named
// with the reason, other non-log entries are only counted. Inputs named explicitly are always
// candidates; an explicit FIFO is read (opened non-blocking, so a FIFO with no writer reads as
// empty instead of hanging).
#pragma once

#include <string>
#include <vector>

#include "diagnose/scanner.h"

namespace vigil::diagnose {

// Whether a file in a walked folder is read: *.log, *.txt, *.json, *.out, *.err, rotated names
// (*.log.1, *.log.2025..., *.log.gz), host system logs (messages, syslog, dmesg, kern and their
// rotated copies: messages-20250101, messages.1), or anything under a plog/ or device-*/ folder.
bool LooksLikeLog(const std::string& path);

// Appends the candidates of `inputs` to res->files (not yet de-duplicated), the unusable ones to
// res->skipped, and counts the others in res->ignored_files.
void WalkInputs(const std::vector<std::string>& inputs, ScanResult* res);

}  // namespace vigil::diagnose
