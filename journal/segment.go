package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// SegmentExt is the file name extension of segment files. A reader given a
// directory reads the files with this extension, in name order.
const SegmentExt = ".kpj"

// tmpExt marks a segment whose header is still being written; it is
// renamed to its final name once the header is complete, so a crash never
// leaves a headerless .kpj file behind.
const tmpExt = ".tmp"

// segmentName is a segment's file name. Names sort by creation time; the
// journal id prefix keeps two writers' names apart.
func segmentName(created time.Time, id [16]byte, seq uint64) string {
	return fmt.Sprintf("journal-%s-%x-%06d%s",
		created.UTC().Format("20060102T150405.000000Z"), id[:4], seq, SegmentExt)
}

// createSegment creates a segment file holding only h, with mode 0600, and
// returns it open for appending. With sync it fsyncs the file and the
// directory so the new name survives a power loss.
func createSegment(dir string, h *segmentHeader, sync bool) (*os.File, string, error) {
	name := segmentName(h.Created, h.JournalID, h.Seq)
	final := filepath.Join(dir, name)
	tmp := filepath.Join(dir, "."+name+tmpExt)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, "", fmt.Errorf("journal: create segment: %w", err)
	}
	fail := func(err error) (*os.File, string, error) {
		f.Close()
		os.Remove(tmp)
		return nil, "", fmt.Errorf("journal: create segment %s: %w", final, err)
	}
	if _, err := f.Write(appendHeader(nil, h)); err != nil {
		return fail(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			return fail(err)
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		return fail(err)
	}
	if sync {
		if err := syncDir(dir); err != nil {
			f.Close()
			return nil, "", fmt.Errorf("journal: create segment %s: %w", final, err)
		}
	}
	return f, final, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// segmentFile is one segment found in a directory.
type segmentFile struct {
	path    string
	size    int64
	modTime time.Time
}

// listSegments returns the segment files in dir sorted by name, which is
// creation order for segments this package wrote.
func listSegments(dir string) ([]segmentFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []segmentFile
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(name, SegmentExt) || strings.HasPrefix(name, ".") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed since ReadDir
			}
			return nil, err
		}
		segs = append(segs, segmentFile{path: filepath.Join(dir, name), size: info.Size(), modTime: info.ModTime()})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].path < segs[j].path })
	return segs, nil
}

// removeStaleTemps deletes segment files whose header a crashed writer
// never finished.
func removeStaleTemps(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".journal-") && strings.HasSuffix(name, SegmentExt+tmpExt) {
			p := filepath.Join(dir, name)
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return removed, err
			}
			removed = append(removed, p)
		}
	}
	return removed, nil
}

// retention returns, oldest first, the segments to delete so that the
// others are at most maxBytes together and none was last written before
// oldest. current, the segment being written, is never chosen. A zero
// maxBytes or oldest disables that limit.
func retention(segs []segmentFile, current string, maxBytes int64, oldest time.Time) []segmentFile {
	var total int64
	for _, s := range segs {
		total += s.size
	}
	var drop []segmentFile
	for _, s := range segs {
		if s.path == current {
			continue
		}
		tooBig := maxBytes > 0 && total > maxBytes
		tooOld := !oldest.IsZero() && s.modTime.Before(oldest)
		if tooBig || tooOld {
			drop = append(drop, s)
			total -= s.size
		}
	}
	return drop
}
