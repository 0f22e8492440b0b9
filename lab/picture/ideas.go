package picture

// An Idea is what on a timeline shows one step's idea (steps.Step.Shows names it): a mark, a
// lane's stretch, the waiters' spinning, or a lane per lock node. Exactly one of Mark, Lane,
// Spins and Nodes is set.
type Idea struct {
	Mark  ID   // a mark: the terminal draws its glyph, the page a mark of its class
	Kind  Kind // with Lane: a stretch of this kind (the terminal draws it as its state's glyph)
	Lane  bool
	Spins bool // a waiter's tries one after another: the terminal's ~, the page's counted N
	Nodes bool // a lane per lock node (a quorum lock)
}

// Ideas are the ideas a step can name, by name.
var Ideas = map[string]Idea{
	"overlap":             {Kind: Overlap, Lane: true},
	"held":                {Kind: Held, Lane: true},
	"crashed":             {Kind: Dead, Lane: true},
	"frozen":              {Kind: Frozen, Lane: true},
	"waits":               {Kind: Wait, Lane: true},
	"spins":               {Spins: true},
	"nodes":               {Nodes: true},
	"expired":             {Mark: Expired},
	"skewed clock":        {Mark: Skewed},
	"GET owner":           {Mark: LockGet},
	"refused":             {Mark: Refused},
	"renew":               {Mark: Renew},
	"Lua unlock":          {Mark: UnlockScript},
	"DELEX":               {Mark: DelEx},
	"WAIT":                {Mark: WaitAck},
	"wake-up":             {Mark: Woken},
	"line":                {Mark: Queued},
	"stale write refused": {Mark: Fenced},
}
