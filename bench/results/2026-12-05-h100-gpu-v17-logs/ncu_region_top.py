import csv,sys,re,collections
f=sys.argv[1]; want=[int(x) for x in sys.argv[2].split(',')]
rows=list(csv.reader(open(f)))
hdr=rows[1]; data=rows[2:]
H={h:i for i,h in enumerate(hdr)}
reasons=[h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
def num(r,k):
    v=r[H[k]].replace(',','')
    try: return float(v)
    except: return 0.0
seg=0; per=collections.defaultdict(collections.Counter); lines=collections.defaultdict(list)
for r in data:
    src=r[H["Source"]].strip()
    op=re.sub(r'^@!?U?P\w+\s+','',src).split(' ')[0].split('.')[0]
    if seg in want:
        for k in reasons: per[seg][k]+=num(r,k)
        lines[seg].append((num(r,"Warp Stall Sampling (All Samples)"),src,max(reasons,key=lambda k:num(r,k))))
    if op=="BAR": seg+=1
for s in want:
    print("== seg",s, per[s].most_common(6))
    for x in sorted(lines[s],reverse=True)[:12]: print("   %6d %-70s %s"%(x[0],x[1][:70],x[2]))
