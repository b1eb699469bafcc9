package decode

import (
	"math"
	"testing"
)

// The expected hash codes were computed independently, by encoding each
// string as UTF-16 and applying h = 31*h + unit with 32-bit wrapping, which
// is what Java's String.hashCode does.
func TestCoordinatorPartition(t *testing.T) {
	tests := []struct {
		name      string
		group     string
		hash      int32
		abs       int32
		partition int32 // of DefaultOffsetsPartitions
	}{
		{"kafka docs example", "test_group_1", -993617980, 993617980, 30},
		{"empty group id", "", 0, 0, 0},
		{"one ascii letter", "a", 97, 97, 47},
		{"negative hash", "my-group", -1906497762, 1906497762, 12},
		// Hash codes equal to Integer.MIN_VALUE: Utils.abs maps them to 0.
		{"min value", "polygenelubricants", math.MinInt32, 0, 0},
		{"min value again", "DESIGNING WORKHOUSES", math.MinInt32, 0, 0},
		// One BMP code point: one UTF-16 unit (U+7EC4).
		{"chinese, one unit", "组", 32452, 32452, 2},
		{"chinese, three units", "消费组", 28099635, 28099635, 35},
		// U+1F600 is outside the BMP: two surrogate units 0xD83D 0xDE00.
		// Hashing the code point itself would give 128512.
		{"emoji surrogate pair", "😀", 1772899, 1772899, 49},
		{"ascii and surrogate pair, negative", "grp-😀", -1235730613, 1235730613, 13},
		// Invalid UTF-8 decodes to U+FFFD, as in Kafka.
		{"invalid utf-8", "\xff", 65533, 65533, 33},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := JavaStringHashCode(tt.group); got != tt.hash {
				t.Errorf("JavaStringHashCode(%q) = %d; want %d", tt.group, got, tt.hash)
			}
			if got := KafkaAbs(tt.hash); got != tt.abs {
				t.Errorf("KafkaAbs(%d) = %d; want %d", tt.hash, got, tt.abs)
			}
			if got := CoordinatorPartition(tt.group, DefaultOffsetsPartitions); got != tt.partition {
				t.Errorf("CoordinatorPartition(%q, 50) = %d; want %d", tt.group, got, tt.partition)
			}
		})
	}
}

func TestCoordinatorKafkaAbs(t *testing.T) {
	tests := []struct {
		name string
		n    int32
		want int32
	}{
		{"zero", 0, 0},
		{"positive", 5, 5},
		{"max", math.MaxInt32, math.MaxInt32},
		// Math.abs, not n & 0x7fffffff (which would give 2147483643).
		{"negative", -5, 5},
		{"min+1", math.MinInt32 + 1, math.MaxInt32},
		{"min", math.MinInt32, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := KafkaAbs(tt.n); got != tt.want {
				t.Errorf("KafkaAbs(%d) = %d; want %d", tt.n, got, tt.want)
			}
		})
	}
}

func TestCoordinatorPartitionCount(t *testing.T) {
	tests := []struct {
		name       string
		partitions int32
		want       int32
	}{
		{"one partition", 1, 0},
		{"seven partitions", 7, 993617980 % 7},
		{"zero partitions", 0, -1},
		{"negative partitions", -3, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CoordinatorPartition("test_group_1", tt.partitions); got != tt.want {
				t.Errorf("CoordinatorPartition(test_group_1, %d) = %d; want %d", tt.partitions, got, tt.want)
			}
		})
	}
}
