package tokenizer

import "strings"

// vocabulary holds the fixed words. Index 0 is reserved for end of sequence
// so an id of 0 never appears in generated text. Order matters: ids are
// indices, and changing the list changes every token id.
var vocabulary = func() []string {
	v := []string{"<eos>", ".", ",", "?", "!", ":", ";"}
	seen := map[string]bool{}
	for _, w := range strings.Fields(words) {
		if !seen[w] {
			seen[w] = true
			v = append(v, w)
		}
	}
	return v
}()

// vocabTable finds each vocabulary word's id by the word's FNV-1a hash,
// which a piece outside the vocabulary needs for its id anyway: open
// addressing over a power-of-two table at least four times the vocabulary,
// each slot id+1 (0: empty). Derived once from vocabulary, never written
// afterwards.
var vocabTable = func() []int32 {
	n := 1
	for n < 4*len(vocabulary) {
		n <<= 1
	}
	t := make([]int32, n)
	for id, w := range vocabulary {
		i := int(fnv32a(w)) & (n - 1)
		for t[i] != 0 {
			i = (i + 1) & (n - 1)
		}
		t[i] = int32(id + 1)
	}
	return t
}()

// vocabID is the id of vocabulary word p, whose FNV-1a hash is h.
func vocabID(p string, h uint32) (int, bool) {
	mask := len(vocabTable) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		e := vocabTable[i]
		if e == 0 {
			return 0, false
		}
		if vocabulary[e-1] == p {
			return int(e - 1), true
		}
	}
}

// EOS is the id of the end-of-sequence token.
const EOS = 0

// FirstWord is the first id that is an alphabetic word (after EOS and punctuation).
const FirstWord = 7

const words = `
the of and to in is was that for it with as his on be at by had are but from or
have an they which one you were her all she there would their we him been has when who
will more no if out so said what up its about into than them can only other new some
could time these two may then do first any my now such like our over man me even most
made after also did many before must through back years where much your way well down
should because each just those people how too little state good very make world still own
see men work long get here between both life being under never day same another know while
last might us great old year off come since against go came right used take three states
himself few house use during without again place around however home small found thought
went say part once general high upon school every don does got united left number course
war until always away something fact though water less public put think almost hand enough
far took head yet government system better set told nothing night end why called didn eyes
find going look asked later knew point next city give group toward young days let room
president side social present given several order national second possible rather per face
among form important often things looked early white john case become large big need four
within felt along children saw best church ever least power development light thing seemed
family interest want members mind country area others although turned done open god service
certain kind problem began different door thus help sense means whole matter perhaps itself
york times law human line above name example action company hands local show whether five
history gave today either act feet across taken past quite anything having seen death
experience body word half really week free field car words already themselves information
tell together college shall money period held keep sure real probably business seems
policy political cannot short brought read price model token cache router serve engine
request batch prefix memory latency throughput stream answer question system prompt value
data result study level table method analysis paper figure section value design process
`
