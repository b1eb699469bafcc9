package decode

import (
	"math"
	"unicode/utf16"
)

// DefaultOffsetsPartitions is Kafka's default offsets.topic.num.partitions:
// the partition count of __consumer_offsets when the cluster did not change it.
const DefaultOffsetsPartitions = 50

// JavaStringHashCode is Java's String.hashCode of s: h = 31*h + c over the
// string's UTF-16 code units, wrapping like Java's int. A code point outside
// the Basic Multilingual Plane counts as its two surrogates. Bytes of s that
// are not valid UTF-8 become U+FFFD, as Kafka's UTF-8 decoder makes them.
func JavaStringHashCode(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// KafkaAbs is Kafka's Utils.abs: the absolute value of n, except that
// math.MinInt32, whose absolute value does not fit, maps to 0 (Java's
// Math.abs would return it unchanged, negative). Note that it is not
// n & 0x7fffffff: that differs for every other negative n, and Kafka's
// partitionFor would then pick another partition.
func KafkaAbs(n int32) int32 {
	switch {
	case n == math.MinInt32:
		return 0
	case n < 0:
		return -n
	}
	return n
}

// CoordinatorPartition is the __consumer_offsets partition that stores group
// and so whose leader coordinates it, for a topic of partitions partitions
// (Kafka's GroupCoordinator.partitionFor). It returns -1 when partitions is
// not positive.
func CoordinatorPartition(group string, partitions int32) int32 {
	if partitions <= 0 {
		return -1
	}
	return KafkaAbs(JavaStringHashCode(group)) % partitions
}
